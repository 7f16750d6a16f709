// RetainedGraphsModel under QAbstractItemModelTester: groups -> roots, columns, growth text, gone
// groups, the scan changing, and GraphScansDocument's stepping and selection, on hand-built scans.
#include "QtTestMain.h"

#include "document/GraphScansDocument.h"
#include "graphs/RetainedGraphsModel.h"

#include <QAbstractItemModelTester>
#include <QSignalSpy>
#include <QApplication>
#include <QtTest>

using namespace memlens::views;
using memlens::model::GraphScanData;
using memlens::model::GraphScans;
using memlens::model::RetainedGraph;
using memlens::model::SessionIteration;

namespace {

RetainedGraph graph(const std::string& root, const std::string& pattern, uint64_t bytes, int64_t firstSeen, int alive = 3,
                    int released = 0) {
    RetainedGraph g;
    g.root = root;
    g.referrers = {root};
    g.pattern = pattern;
    g.retainedBytes = bytes;
    g.exclusiveBytes = bytes;
    g.firstSeen = firstSeen;
    g.savedAlive = alive;
    g.savedReleased = released;
    g.savedTensors = alive + released;
    g.backwardRan = alive == 0 && released > 0;
    g.nodes = 9;
    g.rootShape = {16, 8};
    g.rootDtype = "float32";
    g.rootDevice = "cuda:0";
    g.rootGradFn = "AddmmBackward0";
    return g;
}

// Iterations 1-2 train, 3-5 eval; scans after 2, 3, 4, 5.
//   validate.outs[*]: 1, 2, 3 graphs of 640 KiB from iteration 3 (one per eval iteration)
//   train.loss: one 4-byte skeleton graph in every scan
//   debug.tmp: 2 MiB, only at iteration 4
std::shared_ptr<const GraphScans> scans() {
    std::vector<GraphScanData> out;
    std::vector<SessionIteration> its;
    for (int i = 1; i <= 5; ++i) {
        SessionIteration it;
        it.index = i;
        it.phase = i <= 2 ? "train" : "eval";
        its.push_back(it);
    }
    for (int i = 2; i <= 5; ++i) {
        GraphScanData s;
        s.iteration = i;
        s.phase = its[static_cast<size_t>(i - 1)].phase;
        for (int k = 0; k + 2 < i; ++k)
            s.graphs.push_back(graph("validate.outs[" + std::to_string(k) + "]", "validate.outs[*]", 640 * 1024, 3 + k));
        s.graphs.push_back(graph("train.loss", "train.loss", 4, 2, 0, 2));
        if (i == 4) s.graphs.push_back(graph("debug.tmp", "debug.tmp", 2 << 20, 4));
        for (const auto& g : s.graphs) s.totalRetainedBytes += g.retainedBytes;
        out.push_back(std::move(s));
    }
    return std::make_shared<const GraphScans>(std::move(out), std::move(its));
}

QStringList rows(const QAbstractItemModel& m, const QModelIndex& parent = {}) {
    QStringList out;
    for (int r = 0; r < m.rowCount(parent); ++r) {
        QStringList cells;
        for (int c = 0; c < m.columnCount(); ++c) cells << m.index(r, c, parent).data().toString();
        out << cells.join(QStringLiteral(" | "));
    }
    return out;
}

} // namespace

class TestRetainedGraphsModel : public QObject {
    Q_OBJECT
private slots:
    void groupsAndRootsAtTheLastScan() {
        RetainedGraphsModel m;
        QAbstractItemModelTester tester(&m, QAbstractItemModelTester::FailureReportingMode::QtTest);
        const auto s = scans();
        m.setScans(s, 3);
        QCOMPARE(m.columnCount(), int(RetainedGraphsModel::ColumnCount));
        QCOMPARE(rows(m), (QStringList{
                              QStringLiteral("validate.outs[*] | 3 | 1.9 MiB | +1 graph, +640 KiB per eval iteration since iteration 3 | 9 alive | iteration 3"),
                              QStringLiteral("train.loss | 1 | 4 B | steady: 1 graph since iteration 2 | 2 released (backward ran) | iteration 2"),
                              QStringLiteral("debug.tmp | 0 (was 1) | \u2014 | gone at iteration 5 |  | iteration 4"),
                          }));
        const QModelIndex outs = m.index(0, 0);
        QCOMPARE(m.rowCount(outs), 3);
        QCOMPARE(rows(m, outs).first(), QStringLiteral("validate.outs[0] |  | 640 KiB | 9 nodes | 3 alive | iteration 3"));
        QCOMPARE(m.index(0, 0, outs).data(RetainedGraphsModel::GraphRole).toInt(), 0);
        QCOMPARE(outs.data(RetainedGraphsModel::GraphRole).toInt(), -1);  // a group of several
        QCOMPARE(outs.data(RetainedGraphsModel::StatusRole).toString(), QStringLiteral("growing"));
        QCOMPARE(outs.data(RetainedGraphsModel::CountsRole).toList().size(), 4);
        // a single root is its own row, without children
        const QModelIndex loss = m.index(1, 0);
        QCOMPARE(m.rowCount(loss), 0);
        QCOMPARE(loss.data(RetainedGraphsModel::GraphRole).toInt(), 3);
        QVERIFY(loss.data(Qt::ToolTipRole).toString().contains(QStringLiteral("backward ran")));
        QCOMPARE(m.index(0, RetainedGraphsModel::RetainedColumn).data(RetainedGraphsModel::SortRole).toDouble(), 3.0 * 640 * 1024);
        QCOMPARE(m.indexOfGraph(2), m.index(2, 0, outs));
        QCOMPARE(m.indexOfGraph(3), loss);
        QVERIFY(!m.indexOfGraph(9).isValid());
    }

    void stepsAppearAndGoAway() {
        RetainedGraphsModel m;
        QAbstractItemModelTester tester(&m, QAbstractItemModelTester::FailureReportingMode::QtTest);
        const auto s = scans();
        m.setScans(s, 2);  // iteration 4: debug.tmp is new and the largest
        QCOMPARE(m.rowCount(), 3);
        QCOMPARE(m.index(0, 0).data().toString(), QStringLiteral("debug.tmp"));
        QCOMPARE(m.index(0, RetainedGraphsModel::GrowthColumn).data().toString(), QStringLiteral("new at iteration 4"));
        QCOMPARE(m.index(0, 0).data(RetainedGraphsModel::StatusRole).toString(), QStringLiteral("new"));
        m.setScans(s, 0);  // iteration 2: only the loss
        QCOMPARE(rows(m), QStringList{QStringLiteral("train.loss | 1 | 4 B | first scan | 2 released (backward ran) | iteration 2")});
        m.setScans(nullptr, -1);
        QCOMPARE(m.rowCount(), 0);
    }

    void goneGroupsAreListedOnce() {
        RetainedGraphsModel m;
        QAbstractItemModelTester tester(&m, QAbstractItemModelTester::FailureReportingMode::QtTest);
        // debug.tmp is in the scan of iteration 4 (index 2) and not in that of 5 (index 3)
        const auto s = scans();
        m.setScans(s, 3);
        QStringList r = rows(m);
        QCOMPARE(r.size(), 3);
        QCOMPARE(r.last(), QStringLiteral("debug.tmp | 0 (was 1) | \u2014 | gone at iteration 5 |  | iteration 4"));
        QCOMPARE(m.index(2, 0).data(RetainedGraphsModel::StatusRole).toString(), QStringLiteral("gone"));
        QCOMPARE(m.index(2, 0).data(RetainedGraphsModel::GraphRole).toInt(), -1);
    }

    void documentStepsAndKeepsTheSelectedRoot() {
        GraphScansDocument doc(scans());
        QCOMPARE(doc.scanCount(), 4);
        QCOMPARE(doc.currentScan(), 3);
        QCOMPARE(doc.selectedGraph(), 0);  // the largest of the last scan
        QSignalSpy scan(&doc, &GraphScansDocument::currentScanChanged);
        QSignalSpy graph(&doc, &GraphScansDocument::graphSelected);
        doc.selectGraph(1);  // validate.outs[1]
        QCOMPARE(graph.count(), 1);
        QCOMPARE(doc.selectedGraphData()->root, std::string("validate.outs[1]"));
        doc.previousScan();  // iteration 4: validate.outs[1] is there too, at another index
        QCOMPARE(scan.count(), 1);
        QCOMPARE(doc.currentIteration(), 4);
        QCOMPARE(doc.selectedGraphData()->root, std::string("validate.outs[1]"));
        doc.setCurrentIteration(3);  // only validate.outs[0]: the same group's root
        QCOMPARE(doc.currentScan(), 1);
        QCOMPARE(doc.selectedGraphData()->root, std::string("validate.outs[0]"));
        doc.setCurrentIteration(2);  // no such group: nothing selected
        QCOMPARE(doc.selectedGraph(), -1);
        doc.setCurrentIteration(1);  // before the first scan: the first
        QCOMPARE(doc.currentScan(), 0);
        doc.setCurrentIteration(5);  // the group is back: the root picked last
        QCOMPARE(doc.selectedGraphData()->root, std::string("validate.outs[1]"));
        doc.setCurrentIteration(3);
        QCOMPARE(doc.selectedGraphData()->root, std::string("validate.outs[0]"));
        doc.setCurrentScan(99);
        QCOMPARE(doc.currentScan(), 3);
        doc.selectGraph(42);
        QCOMPARE(doc.selectedGraph(), -1);
    }

    void liveScansFollowTheNewest() {
        auto all = scans();
        std::vector<GraphScanData> firstTwo(all->scans().begin(), all->scans().begin() + 2);
        GraphScansDocument doc(std::make_shared<const GraphScans>(firstTwo, all->iterations()));
        QCOMPARE(doc.currentScan(), 1);
        QSignalSpy changed(&doc, &GraphScansDocument::scansChanged);
        doc.setScans(all);
        QCOMPARE(changed.count(), 1);
        QCOMPARE(doc.currentScan(), 3);  // it was at the newest: it follows
        doc.setCurrentScan(1);
        doc.setScans(all);
        QCOMPARE(doc.currentScan(), 1);  // stepped back: it stays
    }

    void emptyDocument() {
        GraphScansDocument doc(nullptr);
        QCOMPARE(doc.scanCount(), 0);
        QCOMPARE(doc.currentScan(), -1);
        QVERIFY(!doc.currentScanData());
        QVERIFY(!doc.selectedGraphData());
        doc.nextScan();
        QCOMPARE(doc.currentScan(), -1);
    }
};

MEMLENS_GUI_TEST_MAIN(TestRetainedGraphsModel)
#include "tst_retainedgraphsmodel.moc"
