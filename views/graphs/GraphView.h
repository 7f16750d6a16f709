#pragma once
// The "Graph" view: the autograd graph of the selected retained root, laid out by Graphviz on the
// layout thread (GraphLayoutWorker). Each node shows its operation and the bytes of the tensors it
// saved for backward; parameters and their AccumulateGrad nodes fold into the node that uses them;
// big graphs fold repeated structure (12 identical blocks) into one copy with a count. Hovering a
// node shows its saved tensors' shapes and dtypes; clicking it lists them below, and clicking a
// saved tensor there selects its block in the block map and its allocation in the timeline.
#include "memlens/model/GraphScans.h"
#include "graphs/GraphLayoutWorker.h"
#include "document/GraphScansDocument.h"
#include "document/JobTracker.h"

#include <QPointer>
#include <QWidget>

#include <memory>
#include <optional>
#include <vector>

class QCheckBox;
class QGraphicsItem;
class QGraphicsScene;
class QGraphicsView;
class QLabel;
class QSplitter;
class QToolButton;
class QTreeWidget;
class QTreeWidgetItem;

namespace memlens::views {

class PlaceholderPages;
class GraphScansDocument;
class SnapshotDocument;

class GraphView : public QWidget {
    Q_OBJECT
public:
    explicit GraphView(QWidget* parent = nullptr);
    ~GraphView() override;

    // The snapshot whose blocks saved tensors are looked up in (may be null).
    void setDocument(SnapshotDocument* doc);
    SnapshotDocument* document() const { return m_doc; }
    // The scans whose selected graph is shown.
    void setGraphScans(GraphScansDocument* scans);
    GraphScansDocument* graphScans() const { return m_scans; }
    // Shows one graph directly (without scans); null clears the view.
    void setGraph(std::shared_ptr<const model::RetainedGraph> graph);
    const model::RetainedGraph* graph() const { return m_graph.get(); }

    // Folding. Repeated blocks fold by themselves in big graphs until set explicitly.
    void setFoldParameters(bool fold);
    void setFoldRepeats(bool fold);
    bool foldParameters() const;
    bool foldRepeats() const;

    // What is shown, for tests and the window.
    const model::FoldedGraph& folded() const { return m_folded; }
    const GraphLayoutResult* layoutResult() const { return m_layout.get(); }
    // Folding (on a job) or laying out (on the layout thread); layoutFinished() follows.
    bool isLayingOut() const { return m_folding.isRunning() || m_pendingGeneration != 0; }
    QGraphicsScene* scene() const { return m_scene; }
    QGraphicsView* graphicsView() const { return m_view; }
    QTreeWidget* tensorList() const { return m_tensors; }
    QString titleText() const;
    QString placeholderText() const;  // empty while a graph is shown
    QString statusText() const;
    // The node items' tooltips (hover text), by folded node.
    QString nodeToolTip(int node) const;

    int selectedNode() const { return m_selected; }
    void selectNode(int node);
    // The saved tensors listed for the selected node (rows of tensorList()).
    const std::vector<model::SavedTensorInfo>& listedTensors() const { return m_listed; }
    // Acts as a click on a listed tensor: selects the block holding its storage in the snapshot
    // (allocation and alloc entry). Returns whether a block was found.
    bool activateTensor(int row);
    bool activateSavedTensor(const model::SavedTensorInfo& tensor);

    void fitToView();

signals:
    void layoutFinished();
    void nodeSelected(int node);
    // A saved tensor was clicked; ptr 0 when it has none.
    void savedTensorActivated(const QString& name, quint64 ptr);
    // Its block was found and selected (allocIndex -1: allocated before the trace).
    void blockSelected(quint64 address, qint64 allocIndex);

protected:
    bool eventFilter(QObject* watched, QEvent* event) override;

private:
    void graphFromScans();
    struct FoldOutcome {
        model::FoldedGraph folded;
        bool repeats = false;  // repeated blocks folded (chosen, or automatic for big graphs)
    };
    // Folds the graph on a job (what is shown stays until the layout arrives) ...
    void rebuild();
    // ... then lays the folded graph out on the layout thread.
    void foldArrived(FoldOutcome outcome);
    void layoutArrived(quint64 generation, std::shared_ptr<const GraphLayoutResult> result);
    void buildScene();
    void showPlaceholder(const QString& text);
    void fillTensorList();
    void setStatus(const QString& text);
    QString nodeLine(const model::FoldedNode& n) const;
    QString nodeTitle(const model::FoldedNode& n) const;

    QPointer<SnapshotDocument> m_doc;
    QPointer<GraphScansDocument> m_scans;
    std::shared_ptr<const model::RetainedGraph> m_graph;
    model::FoldedGraph m_folded;
    std::shared_ptr<const GraphLayoutResult> m_layout;
    std::vector<QSizeF> m_nodeSizes;
    quint64 m_pendingGeneration = 0;  // the layout requested
    quint64 m_rebuilds = 0;
    std::optional<bool> m_foldRepeats;  // unset: automatic
    bool m_foldParameters = true;
    int m_selected = -1;
    std::vector<model::SavedTensorInfo> m_listed;

    QLabel* m_title = nullptr;
    QLabel* m_info = nullptr;
    QCheckBox* m_paramsBox = nullptr;
    QCheckBox* m_repeatsBox = nullptr;
    QToolButton* m_fit = nullptr;
    PlaceholderPages* m_pages = nullptr;
    QSplitter* m_split = nullptr;
    QGraphicsScene* m_scene = nullptr;
    QGraphicsView* m_view = nullptr;
    QLabel* m_nodeTitle = nullptr;
    QTreeWidget* m_tensors = nullptr;
    QLabel* m_status = nullptr;
    std::vector<QGraphicsItem*> m_nodeItems;
    JobTracker m_folding{this};
};

} // namespace memlens::views
