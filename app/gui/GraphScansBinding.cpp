#include "GraphScansBinding.h"

#include "SessionLoader.h"

#include "memlens/model/SessionFile.h"
#include "memlens/views/GraphScansDocument.h"
#include "memlens/views/SnapshotDocument.h"

#include <QDockWidget>
#include <QMainWindow>
#include <QPointer>

#include <cstdlib>

namespace memlens::gui {

namespace {

const QString kName = QStringLiteral("graphScans");

// The scans and iterations of DOC's session; null when DOC is not a session.
std::shared_ptr<const model::GraphScans> readScans(views::SnapshotDocument* doc, int64_t* iteration) {
    if (SessionState* s = SessionState::of(doc)) {
        *iteration = s->iteration();
        return std::make_shared<const model::GraphScans>(
            model::GraphScans::fromStored(s->file().graphScans(), s->file().iterations()));
    }
    *iteration = 0;
    if (!isSessionFile(doc->path())) return nullptr;
    try {
        return views::GraphScansDocument::load(doc->path());
    } catch (const std::exception&) {
        return nullptr;  // not a session after all, or damaged: the window says so when it opens it
    }
}

// "cuda:1" -> 1, "cuda" -> 0; false for other devices.
bool cudaDevice(const std::string& device, int* index) {
    if (device == "cuda") {
        *index = 0;
        return true;
    }
    if (device.rfind("cuda:", 0) != 0) return false;
    *index = std::atoi(device.c_str() + 5);
    return true;
}

// The block map outlines the blocks of the selected graph's CUDA storages.
void markSelectedGraph(views::SnapshotDocument* doc, const views::GraphScansDocument* g) {
    views::SnapshotDocument::MarkedAddresses marked;
    if (const model::RetainedGraph* graph = g->selectedGraphData()) {
        marked.holder = QString::fromStdString(graph->root);
        for (const model::StorageInfo& s : graph->storages) {
            int device = 0;
            if (cudaDevice(s.device, &device)) marked.addresses.emplace_back(device, s.ptr);
        }
    }
    doc->setMarkedAddresses(std::move(marked));
}

size_t storedScans(views::SnapshotDocument* doc) {
    SessionState* s = SessionState::of(doc);
    return s ? s->file().graphScans().size() : 0;
}

} // namespace

views::GraphScansDocument* graphScansFor(views::SnapshotDocument* doc) {
    if (!doc) return nullptr;
    if (auto* existing = doc->findChild<views::GraphScansDocument*>(kName, Qt::FindDirectChildrenOnly)) return existing;
    if (doc->property("memlensNoGraphScans").toBool()) return nullptr;
    int64_t iteration = 0;
    auto scans = readScans(doc, &iteration);
    if (!scans) {
        doc->setProperty("memlensNoGraphScans", true);  // not a session: not asked again
        return nullptr;
    }
    auto* g = new views::GraphScansDocument(std::move(scans), doc->path(), doc);
    g->setObjectName(kName);
    for (auto signal : {&views::GraphScansDocument::graphSelected, &views::GraphScansDocument::currentScanChanged})
        QObject::connect(g, signal, doc, [doc, g] { markSelectedGraph(doc, g); });
    if (iteration > 0) g->setCurrentIteration(iteration);
    markSelectedGraph(doc, g);
    return g;
}

bool hasGraphScans(views::SnapshotDocument* doc) {
    views::GraphScansDocument* g = graphScansFor(doc);
    return g && g->scanCount() > 0;
}

void syncGraphScans(views::SnapshotDocument* doc) {
    views::GraphScansDocument* g = doc ? doc->findChild<views::GraphScansDocument*>(kName, Qt::FindDirectChildrenOnly) : nullptr;
    if (!g) return;
    int64_t iteration = 0;
    if (storedScans(doc) != static_cast<size_t>(g->scanCount()))
        if (auto scans = readScans(doc, &iteration)) g->setScans(std::move(scans));
    if (SessionState* s = SessionState::of(doc)) iteration = s->iteration();
    if (iteration > 0) g->setCurrentIteration(iteration);
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
