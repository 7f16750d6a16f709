#pragma once
// Graph layout with Graphviz's dot (cgraph + gvc) off the GUI thread.
//
// Graphviz is not thread-safe ("The library is not thread safe", cgraph(3)): every Graphviz call
// of the process happens on ONE thread, the layout thread of the GraphLayoutWorker singleton.
// Requests carry a generation id; a request supersedes the pending one of the same requester,
// and results that are no longer the requester's newest (or whose requester is gone) are
// dropped, never delivered.
#include <QObject>
#include <QPointF>
#include <QRectF>
#include <QString>

#include <atomic>
#include <functional>
#include <memory>
#include <vector>

namespace memlens::views {

// What to lay out; sizes in points (1/72 in), which the result keeps as scene units.
struct GraphLayoutInput {
    struct Node {
        double width = 72, height = 36;
    };
    struct Edge {
        int from = 0, to = 0;
    };
    struct Cluster {
        std::vector<int> nodes;
        QString label;
    };
    std::vector<Node> nodes;
    std::vector<Edge> edges;
    std::vector<Cluster> clusters;
    bool topToBottom = true;
};

// Where everything went: y grows downwards (Qt's scene coordinates), the origin at the top left
// of the drawing.
struct GraphLayoutResult {
    bool ok = false;
    QString error;
    QRectF bounds;
    std::vector<QRectF> nodes;  // boxes, in input order
    struct Edge {
        std::vector<QPointF> points;  // cubic Bézier control points: p0, (c1, c2, p)...
        bool arrow = false;           // an arrowhead from the last point to `end`
        QPointF end;
    };
    std::vector<Edge> edges;  // in input order
    std::vector<QRectF> clusters;
    double seconds = 0;
};

class GraphLayoutWorker : public QObject {
    Q_OBJECT
public:
    using Callback = std::function<void(quint64 generation, std::shared_ptr<const GraphLayoutResult>)>;

    // The process's one layout worker (created on first use, from the GUI thread).
    static GraphLayoutWorker& instance();

    // Lays out `input` on the layout thread; `done` runs on the GUI thread, unless a newer request
    // of the same requester came in the meantime or the requester was destroyed. A pending
    // (not yet started) request of the same requester is dropped at once. Returns the
    // generation id of the request (never 0).
    quint64 request(QObject* requester, std::shared_ptr<const GraphLayoutInput> input, Callback done);
    // Drops the requester's pending request and any result still on its way.
    void cancel(QObject* requester);
    // The newest generation of a requester (0: none).
    quint64 latest(QObject* requester) const;

    // For tests: layouts run so far, and how many different threads have ever called Graphviz
    // (always 1).
    int layoutsRun() const { return m_layouts.load(); }
    int graphvizThreads() const;
    // Nothing queued, nothing being laid out, and every result of a finished layout delivered
    // or dropped: after this, no callback runs until the next request. waitForIdle (GUI thread)
    // runs the event loop until then; false after `timeoutMs`.
    bool isIdle() const;
    bool waitForIdle(int timeoutMs = 60000);

    ~GraphLayoutWorker() override;

private:
    GraphLayoutWorker();
    struct Impl;
    std::unique_ptr<Impl> d;
    std::atomic<int> m_layouts{0};
};

} // namespace memlens::views
