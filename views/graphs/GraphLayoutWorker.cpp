#include "graphs/GraphLayoutWorker.h"

#include <QCoreApplication>
#include <QDeadlineTimer>
#include <QElapsedTimer>
#include <QHash>
#include <QMetaObject>
#include <QPointer>
#include <QThread>

#include <graphviz/cgraph.h>
#include <graphviz/gvc.h>

#include <clocale>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <utility>
#include <locale.h>
#include <mutex>
#include <set>
#include <string>

namespace memlens::views {

namespace {

// Graphviz reports errors through a process-wide callback; it only ever runs on the layout
// thread, which owns this buffer.
std::string gGraphvizErrors;
int collectGraphvizError(char* message) {
    if (gGraphvizErrors.size() < 2000) gGraphvizErrors += message ? message : "";
    return 0;
}

char* cs(const char* s) { return const_cast<char*>(s); }

std::string inches(double points) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.4f", points / 72.0);  // the layout thread runs in the C locale
    return buf;
}

// Lays out one graph. Runs on the layout thread only.
GraphLayoutResult layout(GVC_t* gvc, const GraphLayoutInput& in) {
    GraphLayoutResult out;
    if (!gvc) {
        out.error = QStringLiteral("Graphviz could not be started");
        return out;
    }
    if (in.nodes.empty()) {
        out.ok = true;
        return out;
    }
    gGraphvizErrors.clear();
    Agraph_t* g = agopen(cs("memlens"), Agdirected, nullptr);
    const bool big = in.nodes.size() > 400;
    agattr(g, AGRAPH, cs("rankdir"), cs(in.topToBottom ? "TB" : "LR"));
    agattr(g, AGRAPH, cs("nodesep"), cs("0.3"));
    agattr(g, AGRAPH, cs("ranksep"), cs("0.42"));
    agattr(g, AGRAPH, cs("splines"), cs(big ? "polyline" : "true"));
    if (big) agattr(g, AGRAPH, cs("mclimit"), cs("0.3"));
    agattr(g, AGRAPH, cs("fontsize"), cs("11"));
    agattr(g, AGRAPH, cs("label"), cs(""));
    agattr(g, AGRAPH, cs("margin"), cs("10"));
    agattr(g, AGNODE, cs("shape"), cs("box"));
    agattr(g, AGNODE, cs("fixedsize"), cs("true"));
    agattr(g, AGNODE, cs("label"), cs(""));
    agattr(g, AGNODE, cs("width"), cs("1"));
    agattr(g, AGNODE, cs("height"), cs("0.5"));
    agattr(g, AGEDGE, cs("arrowsize"), cs("0.7"));

    std::vector<Agnode_t*> nodes(in.nodes.size());
    for (size_t i = 0; i < in.nodes.size(); ++i) {
        const std::string name = "n" + std::to_string(i);
        Agnode_t* n = agnode(g, cs(name.c_str()), 1);
        agsafeset(n, cs("width"), cs(inches(std::max(1.0, in.nodes[i].width)).c_str()), cs("1"));
        agsafeset(n, cs("height"), cs(inches(std::max(1.0, in.nodes[i].height)).c_str()), cs("0.5"));
        nodes[i] = n;
    }
    std::vector<Agraph_t*> clusters;
    for (size_t c = 0; c < in.clusters.size(); ++c) {
        const std::string name = "cluster_" + std::to_string(c);
        Agraph_t* sg = agsubg(g, cs(name.c_str()), 1);
        agsafeset(sg, cs("label"), cs(in.clusters[c].label.toUtf8().constData()), cs(""));
        agsafeset(sg, cs("labeljust"), cs("l"), cs(""));
        agsafeset(sg, cs("margin"), cs("12"), cs(""));
        for (int v : in.clusters[c].nodes)
            if (v >= 0 && static_cast<size_t>(v) < nodes.size()) agsubnode(sg, nodes[static_cast<size_t>(v)], 1);
        clusters.push_back(sg);
    }
    std::vector<Agedge_t*> edges(in.edges.size(), nullptr);
    for (size_t i = 0; i < in.edges.size(); ++i) {
        const auto& e = in.edges[i];
        if (e.from < 0 || e.to < 0 || static_cast<size_t>(e.from) >= nodes.size() || static_cast<size_t>(e.to) >= nodes.size())
            continue;
        const std::string name = "e" + std::to_string(i);
        edges[i] = agedge(g, nodes[static_cast<size_t>(e.from)], nodes[static_cast<size_t>(e.to)], cs(name.c_str()), 1);
    }

    if (gvLayout(gvc, g, "dot") != 0) {
        out.error = QStringLiteral("Graphviz could not lay out the graph: %1")
                        .arg(gGraphvizErrors.empty() ? QStringLiteral("no 'dot' layout (is the Graphviz plugin configuration there? `dot -c` writes it)")
                                                     : QString::fromStdString(gGraphvizErrors).trimmed());
        agclose(g);
        return out;
    }
    const boxf bb = GD_bb(g);
    const double top = bb.UR.y;
    auto pt = [&](pointf p) { return QPointF(p.x - bb.LL.x, top - p.y); };
    out.bounds = QRectF(0, 0, bb.UR.x - bb.LL.x, bb.UR.y - bb.LL.y);
    out.nodes.resize(nodes.size());
    for (size_t i = 0; i < nodes.size(); ++i) {
        const QPointF c = pt(ND_coord(nodes[i]));
        const double w = ND_width(nodes[i]) * 72.0, h = ND_height(nodes[i]) * 72.0;
        out.nodes[i] = QRectF(c.x() - w / 2, c.y() - h / 2, w, h);
    }
    out.edges.resize(edges.size());
    for (size_t i = 0; i < edges.size(); ++i) {
        if (!edges[i]) continue;
        const splines* spl = ED_spl(edges[i]);
        if (!spl || spl->size < 1) continue;
        const bezier& bz = spl->list[0];
        auto& oe = out.edges[i];
        for (int k = 0; k < bz.size; ++k) oe.points.push_back(pt(bz.list[k]));
        if (bz.eflag) {
            oe.arrow = true;
            oe.end = pt(bz.ep);
        }
        // further pieces (rare: an edge split around a cluster) continue the path
        for (int s = 1; s < spl->size; ++s)
            for (int k = 1; k < spl->list[s].size; ++k) oe.points.push_back(pt(spl->list[s].list[k]));
    }
    for (Agraph_t* sg : clusters) {
        const boxf cb = GD_bb(sg);
        out.clusters.push_back(QRectF(pt(cb.LL), pt(cb.UR)).normalized());
    }
    gvFreeLayout(gvc, g);
    agclose(g);
    out.ok = true;
    return out;
}

} // namespace

struct GraphLayoutWorker::Impl {
    struct Job {
        QObject* requester = nullptr;  // identity only; never dereferenced off the GUI thread
        QPointer<QObject> guard;       // read on the GUI thread only
        quint64 generation = 0;
        std::shared_ptr<const GraphLayoutInput> input;
        Callback done;
    };

    class Thread : public QThread {
    public:
        explicit Thread(Impl* d) : d(d) {}
        void run() override { d->loop(); }
        Impl* d;
    };

    GraphLayoutWorker* q = nullptr;
    mutable std::mutex mu;
    std::condition_variable cv;
    std::deque<std::shared_ptr<Job>> queue;
    QHash<QObject*, quint64> latest;  // GUI thread and layout thread, under mu
    std::set<QObject*> watched;       // GUI thread
    std::set<Qt::HANDLE> threads;     // under mu
    quint64 nextGeneration = 0;
    bool stop = false;
    bool running = false;
    int delivering = 0;  // results posted to the GUI thread and not yet delivered or dropped, under mu
    // finished layouts waiting for the GUI thread, oldest first, under mu
    std::deque<std::pair<std::shared_ptr<Job>, std::shared_ptr<const GraphLayoutResult>>> outbox;
    Thread thread{this};

    void loop() {
        // Graphviz reads and writes numbers with the C library: keep this thread in the C locale
        // whatever the application's locale is.
        locale_t c = newlocale(LC_ALL_MASK, "C", static_cast<locale_t>(nullptr));
        if (c) uselocale(c);
        agseterr(AGERR);
        agseterrf(collectGraphvizError);
        GVC_t* gvc = gvContext();
        {
            std::lock_guard<std::mutex> lock(mu);
            threads.insert(QThread::currentThreadId());
        }
        for (;;) {
            std::shared_ptr<Job> job;
            {
                std::unique_lock<std::mutex> lock(mu);
                cv.wait(lock, [&] { return stop || !queue.empty(); });
                if (stop) break;
                job = std::move(queue.front());
                queue.pop_front();
                if (latest.value(job->requester) != job->generation) continue;  // superseded
                running = true;
            }
            QElapsedTimer timer;
            timer.start();
            auto result = std::make_shared<GraphLayoutResult>(layout(gvc, *job->input));
            result->seconds = static_cast<double>(timer.nsecsElapsed()) / 1e9;
            {
                // still not idle: from running to delivering in one step
                std::lock_guard<std::mutex> lock(mu);
                running = false;
                ++delivering;
                threads.insert(QThread::currentThreadId());
                outbox.emplace_back(std::move(job), std::move(result));
            }
            q->m_layouts.fetch_add(1);
            // The posted function holds nothing: the job and its result wait in the outbox (under
            // mu), so they are handed over, used and freed on the GUI thread only. Qt may destroy
            // the function object on this thread after the GUI thread ran it, with a reference
            // count ThreadSanitizer cannot see; a capture there raced with the GUI thread's move.
            QMetaObject::invokeMethod(q, [this] { deliverNext(); }, Qt::QueuedConnection);
        }
        if (gvc) gvFreeContext(gvc);
        uselocale(LC_GLOBAL_LOCALE);
        if (c) freelocale(c);
    }

    // GUI thread: the oldest layout the thread finished (one per posted call, in order).
    void deliverNext() {
        std::shared_ptr<Job> job;
        std::shared_ptr<const GraphLayoutResult> result;
        bool current;
        {
            std::lock_guard<std::mutex> lock(mu);
            if (outbox.empty()) return;
            job = std::move(outbox.front().first);
            result = std::move(outbox.front().second);
            outbox.pop_front();
            --delivering;
            current = job->guard && latest.value(job->requester) == job->generation;
        }
        if (current && job->done) job->done(job->generation, std::move(result));
    }
};

GraphLayoutWorker& GraphLayoutWorker::instance() {
    static GraphLayoutWorker* worker = nullptr;
    if (!worker) {
        worker = new GraphLayoutWorker;
        qAddPostRoutine([] {
            delete worker;
            worker = nullptr;
        });
    }
    return *worker;
}

GraphLayoutWorker::GraphLayoutWorker() : d(std::make_unique<Impl>()) {
    d->q = this;
    d->thread.setObjectName(QStringLiteral("memlens graph layout"));
    d->thread.start(QThread::LowPriority);
}

GraphLayoutWorker::~GraphLayoutWorker() {
    {
        std::lock_guard<std::mutex> lock(d->mu);
        d->stop = true;
        d->queue.clear();
    }
    d->cv.notify_all();
    d->thread.wait();
}

quint64 GraphLayoutWorker::request(QObject* requester, std::shared_ptr<const GraphLayoutInput> input, Callback done) {
    auto job = std::make_shared<Impl::Job>();
    job->requester = requester;
    job->guard = requester;
    job->input = input ? std::move(input) : std::make_shared<const GraphLayoutInput>();
    job->done = std::move(done);
    if (requester && d->watched.insert(requester).second) {
        connect(requester, &QObject::destroyed, this, [this, requester] {
            d->watched.erase(requester);
            std::lock_guard<std::mutex> lock(d->mu);
            d->latest.remove(requester);
            std::erase_if(d->queue, [requester](const auto& j) { return j->requester == requester; });
        });
    }
    {
        std::lock_guard<std::mutex> lock(d->mu);
        job->generation = ++d->nextGeneration;
        d->latest[requester] = job->generation;
        std::erase_if(d->queue, [requester](const auto& j) { return j->requester == requester; });
        d->queue.push_back(job);
    }
    d->cv.notify_one();
    return job->generation;
}

void GraphLayoutWorker::cancel(QObject* requester) {
    std::lock_guard<std::mutex> lock(d->mu);
    d->latest[requester] = ++d->nextGeneration;  // nothing older is delivered
    std::erase_if(d->queue, [requester](const auto& j) { return j->requester == requester; });
}

quint64 GraphLayoutWorker::latest(QObject* requester) const {
    std::lock_guard<std::mutex> lock(d->mu);
    return d->latest.value(requester);
}

int GraphLayoutWorker::graphvizThreads() const {
    std::lock_guard<std::mutex> lock(d->mu);
    return static_cast<int>(d->threads.size());
}

bool GraphLayoutWorker::isIdle() const {
    std::lock_guard<std::mutex> lock(d->mu);
    return d->queue.empty() && !d->running && d->delivering == 0;
}

bool GraphLayoutWorker::waitForIdle(int timeoutMs) {
    QDeadlineTimer deadline(timeoutMs);
    while (!isIdle()) {
        if (deadline.hasExpired()) return false;
        // delivering happens in this (the GUI) thread's event loop
        QCoreApplication::processEvents(QEventLoop::AllEvents, 10);
        QCoreApplication::sendPostedEvents();
        if (!isIdle()) QThread::msleep(1);
    }
    return true;
}

} // namespace memlens::views
