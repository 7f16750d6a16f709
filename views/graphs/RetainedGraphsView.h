#pragma once
// The "Retained graphs" panel: the autograd graphs something keeps alive in the current scan,
// grouped by the reference that keeps them (validate.kept_outputs[*]), largest first, with the
// iteration each group first appeared and how it grows ("+1 graph, +640 KiB per eval iteration
// since iteration 4"). A slider steps through the scans (iterations); selecting a root shows its
// graph in the Graph view.
#include "document/GraphScansDocument.h"

#include <QPointer>
#include <QWidget>

class QLabel;
class QSlider;
class QSortFilterProxyModel;
class QToolButton;
class QTreeView;

namespace memlens::views {

class PlaceholderPages;
class GraphScansDocument;
class RetainedGraphsModel;
class SnapshotDocument;

class RetainedGraphsView : public QWidget {
    Q_OBJECT
public:
    explicit RetainedGraphsView(QWidget* parent = nullptr);
    // The snapshot document of the window (unused here; the panel follows the graph scans).
    void setDocument(SnapshotDocument* doc);
    void setGraphScans(GraphScansDocument* scans);
    GraphScansDocument* graphScans() const { return m_scans; }

    RetainedGraphsModel* model() const { return m_model; }
    QSortFilterProxyModel* proxy() const { return m_proxy; }
    QTreeView* tree() const { return m_tree; }
    QSlider* scanSlider() const { return m_slider; }
    QString summaryText() const;
    QString placeholderText() const;  // empty while the list is shown

private:
    void reload();
    void scanChanged();
    void selectFromDocument();
    void rowSelected();

    QPointer<GraphScansDocument> m_scans;
    RetainedGraphsModel* m_model = nullptr;
    QSortFilterProxyModel* m_proxy = nullptr;
    PlaceholderPages* m_pages = nullptr;
    QLabel* m_iteration = nullptr;
    QLabel* m_summary = nullptr;
    QSlider* m_slider = nullptr;
    QToolButton* m_previous = nullptr;
    QToolButton* m_next = nullptr;
    QTreeView* m_tree = nullptr;
    bool m_updating = false;
};

} // namespace memlens::views
