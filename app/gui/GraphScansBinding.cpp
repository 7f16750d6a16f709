#include "GraphScansBinding.h"

#include "SessionLoader.h"

#include "memlens/model/SessionFile.h"
#include "document/GraphScansDocument.h"
#include "document/SnapshotDocument.h"

#include <QDockWidget>
#include <QMainWindow>

namespace memlens::gui {

namespace {

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
    SessionState* session = SessionState::of(doc);
    if (!session) return nullptr;  // a plain snapshot
    if (auto* existing = session->graphScansDocument()) return existing;
    // parsed off the GUI thread by the loader (and by each poll of a live session)
    auto* g = new views::GraphScansDocument(session->graphScans(), doc->path(), doc);
    session->setGraphScansDocument(g);
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
    const SessionState* session = SessionState::of(doc);
    views::GraphScansDocument* g = session ? session->graphScansDocument() : nullptr;
    if (!g) return;
    // a poll parsed new scans (off the GUI thread, only the new ones)
    if (g->sharedScans() != session->graphScans()) g->setScans(session->graphScans());
    if (session->iteration() > 0) g->setCurrentIteration(session->iteration());
}

void showGraphDocks(QDockWidget* graphs, QDockWidget* graph, views::SnapshotDocument* doc, bool docksShown) {
    if (!docksShown || !graphs || !graph) return;
    const bool show = hasGraphScans(doc);
    graphs->setVisible(show);
    graph->setVisible(show);
    // in front the first time a session with retained graphs is shown
    SessionState* session = SessionState::of(doc);
    if (show && session && !session->graphDocksRaised()) {
        session->setGraphDocksRaised();
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
