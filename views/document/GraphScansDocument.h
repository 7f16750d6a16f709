#pragma once
// The retained-graph scans of one session as the graph views see them: which scan is current
// (stepping through iterations), which graph is selected. The Retained graphs panel and the Graph
// view read from here and follow its signals; the window owns one per open session.
#include "memlens/model/GraphScans.h"

#include <QObject>
#include <QString>

#include <atomic>
#include <memory>
#include <vector>

namespace memlens::views {

// The graph scans of a session's graph_scans rows STORED followed by MORE (a poll's new rows),
// with the session's ITERATIONS, parsing only the rows PREVIOUS lacks: PREVIOUS (may be null) is
// what an earlier read of the same session parsed; it is used when it holds exactly the first
// rows of STORED. The result equals model::GraphScans::fromStored(STORED + MORE, ITERATIONS).
// Plain work for a job thread; throws model::Cancelled once CANCEL is set.
std::shared_ptr<const model::GraphScans> graphScansOf(const std::vector<model::GraphScan>& stored,
                                                      const std::vector<model::GraphScan>& more,
                                                      std::vector<model::SessionIteration> iterations,
                                                      const std::shared_ptr<const model::GraphScans>& previous,
                                                      const std::atomic<bool>* cancel = nullptr);

class GraphScansDocument : public QObject {
    Q_OBJECT
public:
    explicit GraphScansDocument(std::shared_ptr<const model::GraphScans> scans, QString path = {}, QObject* parent = nullptr);

    const model::GraphScans& scans() const { return *m_scans; }
    std::shared_ptr<const model::GraphScans> sharedScans() const { return m_scans; }
    QString path() const { return m_path; }
    int scanCount() const { return static_cast<int>(m_scans->scans().size()); }

    // The current scan (-1: none, when the session has no scans).
    int currentScan() const { return m_current; }
    const model::GraphScanData* currentScanData() const;
    int64_t currentIteration() const;

    // The selected graph of the current scan (-1: none).
    int selectedGraph() const { return m_graph; }
    const model::RetainedGraph* selectedGraphData() const;

public slots:
    void setCurrentScan(int scan);
    // The last scan at or before the iteration (the first scan if none is).
    void setCurrentIteration(int64_t iteration);
    void nextScan() { setCurrentScan(m_current + 1); }
    void previousScan() { setCurrentScan(m_current - 1); }
    void selectGraph(int graph);
    // New scans (a live session): keeps the current scan unless it was the last one, then
    // follows the newest.
    void setScans(std::shared_ptr<const model::GraphScans> scans);

signals:
    void scansChanged();
    void currentScanChanged(int scan);
    void graphSelected(int graph);

private:
    int findGraph(int scan, const QString& root, const QString& pattern) const;

    std::shared_ptr<const model::GraphScans> m_scans;
    QString m_path;
    int m_current = -1;
    int m_graph = -1;
    QString m_wantRoot, m_wantPattern;  // the root the user picked last
};

} // namespace memlens::views
