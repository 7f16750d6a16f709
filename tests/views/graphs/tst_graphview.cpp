// GraphView and GraphLayoutWorker: the layout of a real captured graph (every node and edge
// placed, no two node boxes overlapping), folding (parameters, 6 identical blocks), hover text,
// selection (node -> tensor list; saved tensor -> the block and its alloc entry in the snapshot),
// superseded layouts dropped, and one Graphviz thread for everything. Screenshots go to
// MEMLENS_SCREENSHOT_DIR when it is set.
#include "DocumentFixture.h"
#include "GraphFixture.h"
#include "QtTestMain.h"

#include "blockmap/BlockMapCanvas.h"
#include "blockmap/BlockMapView.h"
#include "graphs/GraphLayoutWorker.h"
#include "document/GraphScansDocument.h"
#include "graphs/GraphView.h"
#include "graphs/RetainedGraphsView.h"

#include <QCheckBox>
#include <QElapsedTimer>
#include <QGraphicsScene>
#include <QGraphicsView>
#include <QSignalSpy>
#include <QSplitter>
#include <QTreeWidget>
#include <QApplication>
#include <QtTest>

#include <set>

using namespace memlens::views;
using memlens::model::RetainedGraph;
using memlens::model::SavedTensorInfo;

namespace {

#define REAL_OR_SKIP()                                                                   \
    do {                                                                                 \
        if (!graphfixture::real().scans) QSKIP(qPrintable(graphfixture::real().why));    \
    } while (0)

bool waitLaidOut(GraphView& v) {
    if (!v.isLayingOut()) return v.layoutResult() != nullptr;
    QSignalSpy spy(&v, &GraphView::layoutFinished);
    return spy.wait(60000) && v.layoutResult();
}

// No two node boxes overlap (touching edges allowed).
QString overlaps(const GraphLayoutResult& r) {
    for (size_t i = 0; i < r.nodes.size(); ++i)
        for (size_t j = i + 1; j < r.nodes.size(); ++j) {
            const QRectF a = r.nodes[i].adjusted(0.5, 0.5, -0.5, -0.5), b = r.nodes[j].adjusted(0.5, 0.5, -0.5, -0.5);
            if (a.intersects(b)) return QStringLiteral("nodes %1 and %2 overlap").arg(i).arg(j);
        }
    return {};
}

// Every node placed inside the drawing with its size; every edge has a path from near its
// source box to near its target box.
QString checkPlaced(const memlens::model::FoldedGraph& f, const GraphLayoutResult& r, const std::vector<double>& widths = {}) {
    if (r.nodes.size() != f.nodes.size()) return QStringLiteral("%1 boxes for %2 nodes").arg(r.nodes.size()).arg(f.nodes.size());
    if (r.edges.size() != f.edges.size()) return QStringLiteral("%1 paths for %2 edges").arg(r.edges.size()).arg(f.edges.size());
    const QRectF all = r.bounds.adjusted(-1, -1, 1, 1);
    for (size_t i = 0; i < r.nodes.size(); ++i) {
        if (r.nodes[i].isEmpty() || !all.contains(r.nodes[i])) return QStringLiteral("node %1 is not placed inside the drawing").arg(i);
        if (!widths.empty() && std::abs(r.nodes[i].width() - widths[i]) > 1) return QStringLiteral("node %1 lost its width").arg(i);
    }
    for (size_t i = 0; i < r.edges.size(); ++i) {
        const auto& e = r.edges[i];
        if (e.points.size() < 2) return QStringLiteral("edge %1 has no path").arg(i);
        const QRectF from = r.nodes[f.edges[i].from].adjusted(-3, -3, 3, 3), to = r.nodes[f.edges[i].to].adjusted(-14, -14, 14, 14);
        const QPointF end = e.arrow ? e.end : e.points.back();
        if (!from.contains(e.points.front()) || !to.contains(end))
            return QStringLiteral("edge %1 does not run from its source to its target").arg(i);
    }
    return {};
}

void shoot(QWidget& w, const QString& name) {
    const QString dir = graphfixture::screenshotDir();
    if (dir.isEmpty()) return;
    // scroll bars and layouts settle as on screen: the pending layout requests and repaints done
    QCoreApplication::sendPostedEvents(nullptr, QEvent::LayoutRequest);
    QCoreApplication::processEvents();
    QVERIFY(w.grab().save(dir + QLatin1Char('/') + name));
}

} // namespace

class TestGraphView : public QObject {
    Q_OBJECT
private slots:
    void withoutAGraph() {
        GraphView v;
        v.show();
        QVERIFY(v.placeholderText().contains(QStringLiteral("No session open")));
        QVERIFY(!v.isLayingOut());
        GraphScansDocument empty(nullptr);
        v.setGraphScans(&empty);
        QVERIFY(v.placeholderText().contains(QStringLiteral("Select a root")));
    }

    void laysOutARealGraph() {
        REAL_OR_SKIP();
        const auto g = graphfixture::realGraph("__main__.kept[0]");
        QVERIFY(g);
        QCOMPARE(g->nodesList.size(), size_t(86));
        GraphView v;
        v.resize(900, 800);
        v.show();
        v.setFoldRepeats(false);
        v.setFoldParameters(false);
        v.setGraph(g);
        QVERIFY(v.isLayingOut());
        QVERIFY(waitLaidOut(v));
        const GraphLayoutResult& r = *v.layoutResult();
        QVERIFY2(r.ok, qPrintable(r.error));
        // unfolded: every node and edge of the scan
        QCOMPARE(v.folded().nodes.size(), g->nodesList.size());
        QCOMPARE(v.folded().edges.size(), g->edges.size());
        QString why = checkPlaced(v.folded(), r);
        QVERIFY2(why.isEmpty(), qPrintable(why));
        why = overlaps(r);
        QVERIFY2(why.isEmpty(), qPrintable(why));
        QVERIFY(v.placeholderText().isEmpty());
        shoot(v, QStringLiteral("graph-unfolded.png"));
    }

    void foldsParametersAndRepeatedBlocks() {
        REAL_OR_SKIP();
        const auto g = graphfixture::realGraph("__main__.kept[0]");
        QVERIFY(g);
        // The graph of Net (tests/views/jobs/graph_fixture.py): head Linear <- 6 x Block <- embed
        // Linear. Per Linear: AddmmBackward0 + TBackward0 + weight and bias AccumulateGrad; per
        // block: AddBackward0 (residual), fc2 and fc1 Linears, GeluBackward0, LayerNorm (+ weight,
        // bias). 86 = 4 (head) + 6 x 13 + 4 (embed).
        int acc = 0;
        for (const auto& n : g->nodesList) acc += n.isAccumulateGrad();
        QCOMPARE(acc, 14 * 2 + 6 * 2);  // 14 Linears (weight, bias), 6 LayerNorms (weight, bias)
        GraphView v;
        v.resize(900, 800);
        v.show();
        v.setFoldRepeats(false);
        v.setGraph(g);
        QVERIFY(waitLaidOut(v));
        // parameters folded: 40 AccumulateGrad and 14 TBackward0 nodes go: 86 - 54 = 32
        QCOMPARE(v.folded().foldedParameters, 40);
        QCOMPARE(v.folded().nodes.size(), size_t(32));
        QVERIFY(v.foldParameters());
        QVERIFY(!v.foldRepeats());
        QString why = checkPlaced(v.folded(), *v.layoutResult());
        QVERIFY2(why.isEmpty(), qPrintable(why));
        QVERIFY2(overlaps(*v.layoutResult()).isEmpty(), qPrintable(overlaps(*v.layoutResult())));
        shoot(v, QStringLiteral("graph-parameters-folded.png"));

        // repeated blocks: the 6 blocks fold into one copy of 5 nodes with a count
        v.setFoldRepeats(true);
        QVERIFY(waitLaidOut(v));
        const auto& f = v.folded();
        QCOMPARE(f.repeats.size(), size_t(1));
        QCOMPARE(f.repeats[0].count, 6);
        QCOMPARE(f.repeats[0].nodesPerBlock, 5);
        QCOMPARE(f.nodes.size(), size_t(32 - 5 * 5));
        QCOMPARE(v.layoutResult()->clusters.size(), size_t(1));
        const QRectF cluster = v.layoutResult()->clusters[0];
        for (uint32_t n : f.repeats[0].nodes) QVERIFY(cluster.contains(v.layoutResult()->nodes[n]));
        why = checkPlaced(f, *v.layoutResult());
        QVERIFY2(why.isEmpty(), qPrintable(why));
        QVERIFY(overlaps(*v.layoutResult()).isEmpty());
        // figures over the 6 copies; the hover text says so, with shapes and dtypes
        int gelu = -1;
        for (size_t i = 0; i < f.nodes.size(); ++i)
            if (f.nodes[i].name == "GeluBackward0") gelu = int(i);
        QVERIFY(gelu >= 0);
        QCOMPARE(f.nodes[size_t(gelu)].copies, 6);
        QCOMPARE(f.nodes[size_t(gelu)].savedBytes, uint64_t(6 * 8 * 64 * 4));  // self [8, 64] float32 per block
        const QString tip = v.nodeToolTip(gelu);
        QVERIFY2(tip.contains(QStringLiteral("[8, 64]")) && tip.contains(QStringLiteral("float32")), qPrintable(tip));
        QVERIFY(tip.contains(QStringLiteral("6 identical blocks")));
        shoot(v, QStringLiteral("graph-folded.png"));

        // parameters unfolded again, blocks still folded
        v.setFoldParameters(false);
        QVERIFY(waitLaidOut(v));
        QVERIFY(v.folded().nodes.size() > size_t(32 - 25));
        QCOMPARE(v.folded().foldedParameters, 0);
    }

    void bigGraphsFoldBlocksByThemselves() {
        REAL_OR_SKIP();
        // 32 nodes once parameters are folded: more than 24, blocks fold by themselves
        GraphView v;
        v.setGraph(graphfixture::realGraph("__main__.kept[0]"));
        QVERIFY(waitLaidOut(v));
        QVERIFY(v.foldRepeats());
        QCOMPARE(v.folded().repeats.size(), size_t(1));
        // the user's choice stays, graph after graph
        v.setFoldRepeats(false);
        QVERIFY(waitLaidOut(v));
        QVERIFY(v.folded().repeats.empty());
        v.setGraph(graphfixture::realGraph("__main__.kept[1]"));
        QVERIFY(waitLaidOut(v));
        QVERIFY(!v.foldRepeats());
        QVERIFY(v.folded().repeats.empty());
        // a small graph shows every node even when blocks repeat: Linear, ReLU x 4
        RetainedGraph g;
        g.root = "small";
        for (int i = 0; i < 9; ++i) {
            memlens::model::GraphNodeInfo n;
            n.name = i == 0 ? "SumBackward0" : i % 2 ? "AddmmBackward0" : "ReluBackward0";
            g.nodesList.push_back(n);
            if (i) g.edges.emplace_back(i - 1, i);
        }
        GraphView fresh;
        fresh.setGraph(std::make_shared<const RetainedGraph>(g));
        QVERIFY(waitLaidOut(fresh));
        QVERIFY(!fresh.foldRepeats());
        QCOMPARE(fresh.folded().nodes.size(), size_t(9));
        fresh.setFoldRepeats(true);
        QVERIFY(waitLaidOut(fresh));
        QCOMPARE(fresh.folded().nodes.size(), size_t(3));
    }

    void selectingANodeListsItsTensors() {
        REAL_OR_SKIP();
        GraphView v;
        v.resize(900, 800);
        v.show();
        v.setFoldRepeats(false);
        v.setGraph(graphfixture::realGraph("__main__.kept[0]"));
        QVERIFY(waitLaidOut(v));
        QVERIFY(v.selectedNode() >= 0);  // the node that saves the most, to start with
        QSignalSpy selected(&v, &GraphView::nodeSelected);
        // the root: AddmmBackward0 of the head, saving mat1 (its input) and the weight (mat2)
        const int root = v.folded().nodeOf[0];
        v.selectNode(root);
        QCOMPARE(selected.count(), 1);
        QCOMPARE(selected.at(0).at(0).toInt(), root);
        QStringList names;
        for (const auto& t : v.listedTensors()) names << QString::fromStdString(t.name);
        QVERIFY2(names.contains(QStringLiteral("mat1")), qPrintable(names.join(QLatin1Char(','))));
        QCOMPARE(v.tensorList()->topLevelItemCount(), int(v.listedTensors().size()));
        // CPU tensors are not in the CUDA allocator: the view says so
        QSignalSpy activated(&v, &GraphView::savedTensorActivated);
        QVERIFY(!v.activateTensor(int(names.indexOf(QStringLiteral("mat1")))));
        QCOMPARE(activated.count(), 1);
        QVERIFY2(v.statusText().contains(QStringLiteral("not in the CUDA allocator")), qPrintable(v.statusText()));
        // a click on a node in the scene selects it
        QGraphicsView* gv = v.graphicsView();
        const int other = root == 0 ? 1 : 0;
        const QPoint at = gv->mapFromScene(v.layoutResult()->nodes[size_t(other)].center());
        QTest::mouseClick(gv->viewport(), Qt::LeftButton, {}, at);
        QCOMPARE(v.selectedNode(), other);
    }

    void savedTensorSelectsItsBlockAndAllocation() {
        // a CUDA saved tensor whose storage starts 4 KiB into the block allocated at entry 3
        using namespace tracetest;
        auto doc = document(smallTrace());
        doc->setCurrentEvent(doc->entryCount() - 1);
        RetainedGraph g;
        g.root = "validate.outs[0]";
        memlens::model::GraphNodeInfo n;
        n.name = "MulBackward0";
        SavedTensorInfo t;
        t.name = "self";
        t.inspected = true;
        t.shape = {256};
        t.dtype = "float32";
        t.device = "cuda:0";
        t.bytes = 256 * KiB;
        t.ptr = slot(1) + 4096;  // D, allocated at entry 7 in B's slot
        n.saved.push_back(t);
        SavedTensorInfo c = t;
        c.name = "other";
        c.ptr = slot(2) + 16;  // C: allocated at entry 3, freed at entry 9
        n.saved.push_back(c);
        SavedTensorInfo nowhere = t;
        nowhere.name = "mask";
        nowhere.ptr = slot(6) + 16;  // inside the segment, in no allocated block
        n.saved.push_back(nowhere);
        SavedTensorInfo elsewhere = t;
        elsewhere.name = "weight";
        elsewhere.device = "cuda:1";  // D's address, but on another GPU than the one shown
        n.saved.push_back(elsewhere);
        g.nodesList.push_back(n);
        g.nodes = 1;
        GraphView v;
        v.setDocument(doc.get());
        BlockMapView blocks;
        blocks.setDocument(doc.get());
        v.setGraph(std::make_shared<const RetainedGraph>(g));
        QVERIFY(waitLaidOut(v));
        v.selectNode(0);
        QCOMPARE(v.listedTensors().size(), size_t(4));

        QSignalSpy allocation(doc.get(), &SnapshotDocument::allocationSelected);
        QSignalSpy current(doc.get(), &SnapshotDocument::currentEventChanged);
        QSignalSpy block(&v, &GraphView::blockSelected);
        QSignalSpy activated(&v, &GraphView::savedTensorActivated);
        QVERIFY(v.activateTensor(0));
        QCOMPARE(activated.count(), 1);
        QCOMPARE(activated.at(0).at(1).toULongLong(), quint64(slot(1) + 4096));
        QCOMPARE(allocation.count(), 1);
        QCOMPARE(doc->selectedStack(), doc->deviceData().trace.stack[7]);
        QCOMPARE(doc->currentEvent(), int64_t(7));
        QCOMPARE(doc->selectedAddress(), std::optional<uint64_t>(slot(1)));
        QCOMPARE(blocks.canvas()->selectedAddress(), std::optional<uint64_t>(slot(1)));  // the block map outlines it
        QCOMPARE(current.count(), 1);
        QCOMPARE(block.count(), 1);
        QCOMPARE(block.at(0).at(0).toULongLong(), quint64(slot(1)));
        QCOMPARE(block.at(0).at(1).toLongLong(), qint64(7));
        QVERIFY(v.statusText().contains(QStringLiteral("allocated at entry #7")));

        // C is live at entry 7: its block, and its alloc entry
        QVERIFY(v.activateTensor(1));
        QCOMPARE(doc->currentEvent(), int64_t(3));
        QCOMPARE(doc->selectedStack(), doc->deviceData().trace.stack[3]);
        QCOMPARE(allocation.count(), 2);
        // nothing allocated there, now or at the end
        QVERIFY(!v.activateTensor(2));
        QCOMPARE(allocation.count(), 2);
        QVERIFY2(v.statusText().contains(QStringLiteral("in no allocated block")), qPrintable(v.statusText()));
        // on another GPU: not looked up in this device's blocks
        QVERIFY(!v.activateTensor(3));
        QCOMPARE(allocation.count(), 2);
        QVERIFY2(v.statusText().contains(QStringLiteral("is on cuda:1; the views show device 0")), qPrintable(v.statusText()));
        // no snapshot open: said so
        v.setDocument(nullptr);
        QVERIFY(!v.activateTensor(0));
        QVERIFY(v.statusText().contains(QStringLiteral("no snapshot")));
    }

    void supersededLayoutsAreDropped() {
        REAL_OR_SKIP();
        GraphView v;
        QSignalSpy done(&v, &GraphView::layoutFinished);
        const auto big = graphfixture::realGraph("__main__.kept[0]");
        const auto small = graphfixture::realGraph("__main__.loss");
        QVERIFY(big && small);
        v.setFoldParameters(false);
        v.setFoldRepeats(false);
        for (int i = 0; i < 5; ++i) {
            v.setGraph(big);
            v.setGraph(small);
        }
        QVERIFY(done.wait(60000));
        // the worker idle: every layout run and its result delivered or dropped; only then count
        QVERIFY(GraphLayoutWorker::instance().waitForIdle(60000));
        QCOMPARE(done.count(), 1);
        QCOMPARE(v.layoutResult()->nodes.size(), small->nodesList.size());
        // a view destroyed while its layout runs gets nothing (and nothing crashes)
        {
            GraphView gone;
            gone.setFoldParameters(false);
            gone.setGraph(big);
        }
        QVERIFY(GraphLayoutWorker::instance().waitForIdle(60000));
    }

    void oneGraphvizThreadForEverything() {
        REAL_OR_SKIP();
        // several views laying out at once
        std::vector<std::unique_ptr<GraphView>> views;
        for (int i = 0; i < 3; ++i) {
            views.push_back(std::make_unique<GraphView>());
            views.back()->setFoldRepeats(i == 0);
            views.back()->setGraph(graphfixture::realGraph(i == 2 ? "__main__.loss" : "__main__.kept[1]"));
        }
        for (auto& v : views) QVERIFY(waitLaidOut(*v));
        auto& w = GraphLayoutWorker::instance();
        QVERIFY(w.layoutsRun() >= 3);
        QCOMPARE(w.graphvizThreads(), 1);
        // and it is not the GUI thread: the layouts arrived while the event loop ran
    }

    void bigGraphsStillLayOut() {
        // 45 residual blocks with their parameters shown and nothing folded: 947 nodes
        RetainedGraph g;
        g.root = "big";
        auto add = [&](const char* name) {
            memlens::model::GraphNodeInfo n;
            n.name = name;
            g.nodesList.push_back(n);
            return uint32_t(g.nodesList.size() - 1);
        };
        auto param = [&](uint32_t user) {
            memlens::model::GraphNodeInfo n;
            n.name = "torch::autograd::AccumulateGrad";
            n.param = true;
            g.nodesList.push_back(n);
            g.edges.emplace_back(user, uint32_t(g.nodesList.size() - 1));
        };
        uint32_t prev = add("SumBackward0");
        uint32_t lastNorm = prev;
        for (int b = 0; b < 45; ++b) {
            const uint32_t a = add("AddBackward0");  // the residual stream: from the block above
            g.edges.emplace_back(prev, a);
            if (lastNorm != prev) g.edges.emplace_back(lastNorm, a);
            uint32_t x = a;
            for (const char* op : {"AddmmBackward0", "GeluBackward0", "AddmmBackward0", "NativeLayerNormBackward0"}) {
                const uint32_t n = add(op);
                g.edges.emplace_back(x, n);
                for (int p = 0; p < 4; ++p) param(n);
                x = n;
            }
            prev = a;
            lastNorm = x;
        }
        const uint32_t end = add("EmbeddingBackward0");
        g.edges.emplace_back(prev, end);
        g.edges.emplace_back(lastNorm, end);
        g.nodes = int64_t(g.nodesList.size());
        QCOMPARE(g.nodesList.size(), size_t(2 + 45 * 21));
        GraphView v;
        v.setFoldParameters(false);
        v.setFoldRepeats(false);
        QElapsedTimer t;
        t.start();
        v.setGraph(std::make_shared<const RetainedGraph>(g));
        QVERIFY(waitLaidOut(v));
        qInfo("%zu nodes laid out in %lld ms", g.nodesList.size(), static_cast<long long>(t.elapsed()));
        QVERIFY(v.layoutResult()->ok);
        QVERIFY(overlaps(*v.layoutResult()).isEmpty());
        const QString why = checkPlaced(v.folded(), *v.layoutResult());
        QVERIFY2(why.isEmpty(), qPrintable(why));
        // folded, the same graph is a handful of nodes
        v.setFoldParameters(true);
        v.setFoldRepeats(true);
        QVERIFY(waitLaidOut(v));
        QVERIFY(v.folded().nodes.size() < 12);
    }

    void workerDirectly() {
        // a hand-made input: a chain with a cluster; results come back in scene coordinates
        auto in = std::make_shared<GraphLayoutInput>();
        for (int i = 0; i < 4; ++i) in->nodes.push_back({100.0 + 10 * i, 30.0});
        in->edges = {{0, 1}, {1, 2}, {2, 3}, {0, 3}};
        in->clusters.push_back({{1, 2}, QStringLiteral("\u00d7 3")});
        QObject requester;
        std::shared_ptr<const GraphLayoutResult> got;
        quint64 gotGen = 0;
        const quint64 gen = GraphLayoutWorker::instance().request(&requester, in, [&](quint64 g, auto r) {
            gotGen = g;
            got = std::move(r);
        });
        QVERIFY(gen > 0);
        QCOMPARE(GraphLayoutWorker::instance().latest(&requester), gen);
        QTRY_VERIFY_WITH_TIMEOUT(got != nullptr, 30000);
        QCOMPARE(gotGen, gen);
        QVERIFY(got->ok);
        QCOMPARE(got->nodes.size(), size_t(4));
        for (int i = 0; i < 4; ++i) QCOMPARE(std::lround(got->nodes[size_t(i)].width()), std::lround(100.0 + 10 * i));
        // top to bottom: each node below the one before
        for (int i = 1; i < 4; ++i) QVERIFY(got->nodes[size_t(i)].top() > got->nodes[size_t(i - 1)].bottom());
        QCOMPARE(got->clusters.size(), size_t(1));
        QVERIFY(got->clusters[0].contains(got->nodes[1]) && got->clusters[0].contains(got->nodes[2]));
        QVERIFY(!got->clusters[0].contains(got->nodes[0]));
        QVERIFY(got->bounds.contains(got->clusters[0]));
        // cancel: a result on its way is not delivered
        got.reset();
        GraphLayoutWorker::instance().request(&requester, in, [&](quint64, auto r) { got = std::move(r); });
        GraphLayoutWorker::instance().cancel(&requester);
        // idle: the cancelled layout has run (or was dropped before) and its result was dropped
        QVERIFY(GraphLayoutWorker::instance().waitForIdle(30000));
        QVERIFY(!got);
    }

    void panelAndGraphTogether() {
        REAL_OR_SKIP();
        // the two views on one document, as the window docks them; stepping back to iteration 4
        // shows the first kept graph; screenshots of both
        GraphScansDocument doc(graphfixture::real().scans);
        RetainedGraphsView panel;
        panel.resize(900, 260);
        panel.setGraphScans(&doc);
        panel.show();
        GraphView graph;
        graph.resize(900, 820);
        graph.setGraphScans(&doc);
        graph.show();
        QVERIFY(graph.graph());
        QCOMPARE(graph.graph()->root, std::string("__main__.kept[0]"));
        QVERIFY(waitLaidOut(graph));
        shoot(panel, QStringLiteral("retained-graphs.png"));
        shoot(graph, QStringLiteral("graph.png"));
        doc.selectGraph(4);  // __main__.loss: a skeleton graph, its saved tensors released
        QCOMPARE(graph.graph()->root, std::string("__main__.loss"));
        // the graph shown stays (inert) while the next one is laid out: no placeholder flashes
        QVERIFY(graph.isLayingOut());
        QVERIFY(graph.placeholderText().isEmpty());
        QVERIFY(!graph.graphicsView()->isInteractive());
        QVERIFY(graph.graph()->backwardRan);
        QVERIFY(waitLaidOut(graph));
        shoot(graph, QStringLiteral("graph-skeleton.png"));
        doc.selectGraph(0);
        doc.setCurrentIteration(4);
        QCOMPARE(graph.graph()->root, std::string("__main__.kept[0]"));
        QVERIFY(waitLaidOut(graph));
        shoot(panel, QStringLiteral("retained-graphs-iteration4.png"));
    }
};

MEMLENS_GUI_TEST_MAIN(TestGraphView)
#include "tst_graphview.moc"
