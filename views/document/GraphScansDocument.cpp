#include "document/GraphScansDocument.h"

#include "memlens/model/ParseError.h"

#include <algorithm>

namespace memlens::views {

std::shared_ptr<const model::GraphScans> graphScansOf(const std::vector<model::GraphScan>& stored,
                                                      const std::vector<model::GraphScan>& more,
                                                      std::vector<model::SessionIteration> iterations,
                                                      const std::shared_ptr<const model::GraphScans>& previous,
                                                      const std::atomic<bool>* cancel) {
    // how many of the first stored rows PREVIOUS parsed: all of its scans, by row id (its scans
    // are sorted by iteration, the rows by id)
    size_t covered = 0;
    if (previous && !previous->empty() && previous->scans().size() <= stored.size()) {
        std::vector<int64_t> ids;
        ids.reserve(previous->scans().size());
        for (const auto& s : previous->scans()) ids.push_back(s.id);
        std::sort(ids.begin(), ids.end());
        bool same = true;
        for (size_t i = 0; i < ids.size() && same; ++i) same = ids[i] != 0 && ids[i] == stored[i].id;
        if (same) covered = ids.size();
    }
    std::vector<model::GraphScanData> scans;
    scans.reserve(stored.size() + more.size());
    // the parsed ones in their (stable) sorted order: sorting again with the new ones after them
    // gives the order sorting all rows in row order gives
    if (covered > 0) scans = previous->scans();
    auto parse = [&](const model::GraphScan& row) {
        if (cancel && cancel->load()) throw model::Cancelled();
        scans.push_back(model::parseGraphScan(row));
    };
    for (size_t i = covered; i < stored.size(); ++i) parse(stored[i]);
    for (const auto& row : more) parse(row);
    if (cancel && cancel->load()) throw model::Cancelled();
    return std::make_shared<const model::GraphScans>(std::move(scans), std::move(iterations));
}

GraphScansDocument::GraphScansDocument(std::shared_ptr<const model::GraphScans> scans, QString path, QObject* parent)
    : QObject(parent), m_scans(scans ? std::move(scans) : std::make_shared<const model::GraphScans>()), m_path(std::move(path)) {
    m_current = scanCount() - 1;
    if (const auto* s = currentScanData(); s && !s->graphs.empty()) m_graph = 0;
}

const model::GraphScanData* GraphScansDocument::currentScanData() const {
    if (m_current < 0 || m_current >= scanCount()) return nullptr;
    return &m_scans->scans()[static_cast<size_t>(m_current)];
}

int64_t GraphScansDocument::currentIteration() const {
    const auto* s = currentScanData();
    return s ? s->iteration : 0;
}

const model::RetainedGraph* GraphScansDocument::selectedGraphData() const {
    const auto* s = currentScanData();
    if (!s || m_graph < 0 || m_graph >= static_cast<int>(s->graphs.size())) return nullptr;
    return &s->graphs[static_cast<size_t>(m_graph)];
}

int GraphScansDocument::findGraph(int scan, const QString& root, const QString& pattern) const {
    if (scan < 0 || scan >= scanCount()) return -1;
    const auto& graphs = m_scans->scans()[static_cast<size_t>(scan)].graphs;
    const std::string r = root.toStdString(), p = pattern.toStdString();
    for (size_t i = 0; i < graphs.size(); ++i)
        if (graphs[i].root == r) return static_cast<int>(i);
    for (size_t i = 0; i < graphs.size(); ++i)
        if (graphs[i].pattern == p) return static_cast<int>(i);
    return -1;
}

void GraphScansDocument::setCurrentScan(int scan) {
    if (scanCount() == 0) return;
    scan = std::clamp(scan, 0, scanCount() - 1);
    if (scan == m_current) return;
    // keep the root the user picked (or one of its group) across scans, also across scans
    // without it; with nothing picked, the largest
    m_current = scan;
    int graph = -1;
    if (!m_wantRoot.isEmpty()) graph = findGraph(scan, m_wantRoot, m_wantPattern);
    else if (const auto* s = currentScanData(); s && !s->graphs.empty()) graph = 0;
    m_graph = graph;
    emit currentScanChanged(scan);
    emit graphSelected(m_graph);  // another scan: another graph object, even at the same index
}

void GraphScansDocument::setCurrentIteration(int64_t iteration) {
    const int s = m_scans->scanAtIteration(iteration);
    setCurrentScan(s < 0 ? 0 : s);
}

void GraphScansDocument::selectGraph(int graph) {
    const auto* s = currentScanData();
    if (!s || graph < -1 || graph >= static_cast<int>(s->graphs.size())) graph = -1;
    if (graph == m_graph) return;
    m_graph = graph;
    const auto* g = selectedGraphData();
    m_wantRoot = g ? QString::fromStdString(g->root) : QString();
    m_wantPattern = g ? QString::fromStdString(g->pattern) : QString();
    emit graphSelected(graph);
}

void GraphScansDocument::setScans(std::shared_ptr<const model::GraphScans> scans) {
    if (!scans) return;
    const bool followNewest = m_current < 0 || m_current == scanCount() - 1;
    QString root, pattern;
    if (const auto* g = selectedGraphData()) {
        root = QString::fromStdString(g->root);
        pattern = QString::fromStdString(g->pattern);
    }
    m_scans = std::move(scans);
    m_current = followNewest ? scanCount() - 1 : std::min(m_current, scanCount() - 1);
    if (!m_wantRoot.isEmpty()) m_graph = findGraph(m_current, m_wantRoot, m_wantPattern);
    else m_graph = root.isEmpty() ? -1 : findGraph(m_current, root, pattern);
    if (m_graph < 0 && m_wantRoot.isEmpty() && currentScanData() && !currentScanData()->graphs.empty()) m_graph = 0;
    emit scansChanged();
    emit currentScanChanged(m_current);
    emit graphSelected(m_graph);
}

} // namespace memlens::views
