#pragma once
// One tree of AllocationSites (bottom-up or top-down) as an item model. Columns: function,
// location, bytes, % of all, count; children in the order the tree keeps them (bytes
// descending). Data is swapped whole inside a model reset.
#include "memlens/model/AllocationSites.h"
#include "memlens/model/FrameClassification.h"
#include "memlens/model/Snapshot.h"

#include <QAbstractItemModel>

#include <memory>
#include <vector>

namespace memlens::views {

class AllocationSitesModel : public QAbstractItemModel {
    Q_OBJECT
public:
    enum Column { FunctionColumn, LocationColumn, BytesColumn, PercentColumn, CountColumn, ColumnCount };
    enum Role {
        SortRole = Qt::UserRole + 1,  // numbers for the numeric columns, text for the others
        StackRole,                    // the stack bringing the most bytes through the node
        FrameIdRole,                  // model::FrameId, kNoFrame for "no stack recorded"
        NodeRole,                     // index of the node in the tree
        FilterRole,                   // function and location, for searching
        LiveBytesRole,                // of the bytes, still live at the end of the range
    };
    enum class Tree { BottomUp, TopDown };

    explicit AllocationSitesModel(Tree tree, QObject* parent = nullptr);

    Tree tree() const { return m_tree; }
    // `range`: the sites count what a range of entries allocated (else what is live at an entry).
    void setSites(std::shared_ptr<const model::Snapshot> snapshot, std::shared_ptr<const model::AllocationSites> sites,
                  bool range);
    void clear();
    const model::AllocationSites* sites() const { return m_sites.get(); }
    bool isRange() const { return m_range; }

    const model::SiteNode* node(const QModelIndex& index) const;
    // "forward (model.py:42): 1.2 GiB in 34 allocations"
    QString describe(const QModelIndex& index) const;

    QModelIndex index(int row, int column, const QModelIndex& parent = QModelIndex()) const override;
    QModelIndex parent(const QModelIndex& child) const override;
    int rowCount(const QModelIndex& parent = QModelIndex()) const override;
    int columnCount(const QModelIndex& parent = QModelIndex()) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

private:
    const model::SiteTree* siteTree() const;
    QString functionText(model::FrameId frame) const;
    QString locationText(model::FrameId frame, bool full) const;

    Tree m_tree;
    std::shared_ptr<const model::Snapshot> m_snapshot;
    std::shared_ptr<const model::AllocationSites> m_sites;
    std::vector<model::FrameKind> m_kinds;  // per frame of the snapshot
    const model::Snapshot* m_kindsOf = nullptr;
    bool m_range = false;
};

} // namespace memlens::views
