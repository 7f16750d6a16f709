#pragma once
// The retained graphs of one scan as a tree: a row per referrer group (roots that share a pattern
// such as validate.kept_outputs[*]), largest first, with one child per root when the group has
// several; groups that went away since the previous scan follow, greyed.
#include "memlens/model/GraphScans.h"

#include <QAbstractItemModel>

#include <memory>
#include <vector>

namespace memlens::views {

class RetainedGraphsModel : public QAbstractItemModel {
    Q_OBJECT
public:
    // growth early: in a narrow dock it is the column that matters after the bytes
    enum Column { RootColumn, GraphsColumn, RetainedColumn, GrowthColumn, SavedColumn, FirstSeenColumn, ColumnCount };
    enum Role {
        SortRole = Qt::UserRole + 1,  // numbers for numeric columns, text otherwise
        GraphRole,                    // index of the graph in the scan (-1 for a group of several)
        GroupRole,                    // index into GraphScans::groups()
        StatusRole,                   // "new", "growing", "steady", "shrinking", "gone", "single"
        CountsRole,                   // QVariantList of the group's graph counts, scans 0..current
    };

    explicit RetainedGraphsModel(QObject* parent = nullptr);

    void setScans(std::shared_ptr<const model::GraphScans> scans, int scan);
    int scan() const { return m_scan; }

    // The row of a graph (for selecting it from outside); invalid if not shown.
    QModelIndex indexOfGraph(int graph) const;

    QModelIndex index(int row, int column, const QModelIndex& parent = {}) const override;
    QModelIndex parent(const QModelIndex& child) const override;
    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

private:
    struct Group {
        size_t group = 0;
        std::vector<size_t> graphs;  // in the scan
        model::GroupGrowth growth;
    };
    QVariant groupData(const Group& g, int column, int role) const;
    QVariant graphData(const Group& g, size_t graph, int column, int role) const;
    QString savedText(const model::RetainedGraph& g) const;
    QString graphTooltip(const model::RetainedGraph& g) const;

    std::shared_ptr<const model::GraphScans> m_scans;
    int m_scan = -1;
    std::vector<Group> m_groups;
};

} // namespace memlens::views
