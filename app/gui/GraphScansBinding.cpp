#include "GraphScansBinding.h"

#include "SessionLoader.h"

#include "memlens/model/SessionFile.h"
#include "document/GraphScansDocument.h"
#include "document/SnapshotDocument.h"

#include <QDockWidget>
#include <QMainWindow>

namespace memlens::gui {

namespace {

const QString kName = QStringLiteral("graphScans");

// The scans of a session, with its iterations (for growth per phase).
std::shared_ptr<const model::GraphScans> scansOf(const SessionState& s) {
    return std::make_shared<const model::GraphScans>(model::GraphScans::fromStored(s.file().graphScans(), s.file().iterations()));
}

// The block map outlines the blocks of the selected graph's CUDA storages.
void markSelectedGraph(views::SnapshotDocument* doc, const views::GraphScansDocument* g) {
    views::SnapshotDocument::MarkedAddresses marked;
    if (const model::RetainedGraph* graph = g->selectedGraphData()) {
        marked.holder = QString::fromStdString(graph->root);
        for (const model::StorageInfo& s : graph->storages)
            if (const auto device = model::cudaDeviceIndex(s.device)) marked.addresses.emplace_back(*device, s.ptr);
    }
    doc->setMarkedAddresses(std::move(marked));
}

} // namespace

views::GraphScansDocument* graphScansFor(views::SnapshotDocument* doc) {
    if (!doc) return nullptr;
    if (auto* existing = doc->findChild<views::GraphScansDocument*>(kName, Qt::FindDirectChildrenOnly)) return existing;
    const SessionState* session = SessionState::of(doc);
    if (!session) return nullptr;  // a plain snapshot
    auto* g = new views::GraphScansDocument(scansOf(*session), doc->path(), doc);
    g->setObjectName(kName);
    for (auto signal : {&views::GraphScansDocument::graphSelected, &views::GraphScansDocument::currentScanChanged})
        QObject::connect(g, signal, doc, [doc, g] { markSelectedGraph(doc, g); });
    if (session->iteration() > 0) g->setCurrentIteration(session->iteration());
    markSelectedGraph(doc, g);
    return g;
}

bool hasGraphScans(views::SnapshotDocument* doc) {
    views::GraphScansDocument* g = graphScansFor(doc);
    return g && g->scanCount() > 0;
}

void syncGraphScans(views::SnapshotDocument* doc) {
    views::GraphScansDocument* g = doc ? doc->findChild<views::GraphScansDocument*>(kName, Qt::FindDirectChildrenOnly) : nullptr;
    const SessionState* session = SessionState::of(doc);
    if (!g || !session) return;
    if (session->file().graphScans().size() != static_cast<size_t>(g->scanCount())) g->setScans(scansOf(*session));
    if (session->iteration() > 0) g->setCurrentIteration(session->iteration());
}

void showGraphDocks(QDockWidget* graphs, QDockWidget* graph, views::SnapshotDocument* doc, bool docksShown) {
    if (!docksShown || !graphs || !graph) return;
    const bool show = hasGraphScans(doc);
    graphs->setVisible(show);
    graph->setVisible(show);
    // in front the first time a session with retained graphs is shown
    if (show && !doc->property("memlensGraphDocksRaised").toBool()) {
        doc->setProperty("memlensGraphDocksRaised", true);
        const auto* g = graphScansFor(doc);
        const auto* last = g ? g->currentScanData() : nullptr;
        if (last && !last->graphs.empty()) {
            graphs->raise();
            graph->raise();
            // the graph beside the stack: wider than the stack needs
            if (auto* window = qobject_cast<QMainWindow*>(graph->parentWidget()); window && !graph->isFloating()) {
                const int w = window->width();
                window->resizeDocks({graphs, graph}, {w * 38 / 100, w * 34 / 100}, Qt::Horizontal);
            }
        }
    }
}

} // namespace memlens::gui
