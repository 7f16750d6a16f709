// RetainedGraphsView on real scans (tests/views/jobs/graph_fixture.py: eval outputs kept, one
// more full graph per eval iteration): the groups and their growth, stepping through the scans
// with the slider and the buttons (roots appearing, growing), selecting a root, no scans.
#include "GraphFixture.h"
#include "QtTestMain.h"

#include "document/GraphScansDocument.h"
#include "graphs/RetainedGraphsModel.h"
#include "graphs/RetainedGraphsView.h"

#include <QAbstractItemModelTester>
#include <QSignalSpy>
#include <QSlider>
#include <QSortFilterProxyModel>
#include <QTreeView>
#include <QApplication>
#include <QtTest>

using namespace memlens::views;

namespace {

QString cell(const QAbstractItemModel& m, int row, int column, const QModelIndex& parent = {}) {
    return m.index(row, column, parent).data().toString();
}

} // namespace

class TestRetainedGraphsView : public QObject {
    Q_OBJECT
private slots:
    void withoutScans() {
        RetainedGraphsView v;
        v.show();
        QVERIFY(v.placeholderText().contains(QStringLiteral("No session open")));
        GraphScansDocument none(nullptr);
        v.setGraphScans(&none);
        QVERIFY(v.placeholderText().contains(QStringLiteral("No graph scans in this session")));
    }

    void realScansGroupedWithTheirGrowth() {
        if (!graphfixture::real().scans) QSKIP(qPrintable(graphfixture::real().why));
        GraphScansDocument doc(graphfixture::real().scans);
        RetainedGraphsView v;
        v.resize(900, 300);
        v.setGraphScans(&doc);
        v.show();
        QAbstractItemModelTester tester(v.model(), QAbstractItemModelTester::FailureReportingMode::QtTest);
        QVERIFY(v.placeholderText().isEmpty());
        QCOMPARE(doc.scanCount(), 10);
        QCOMPARE(v.scanSlider()->maximum(), 9);
        QCOMPARE(v.scanSlider()->value(), 9);
        // two groups, the kept outputs first (largest), four of them, one more per eval iteration
        const QAbstractItemModel& m = *v.proxy();
        QCOMPARE(m.rowCount(), 2);
        QCOMPARE(cell(m, 0, RetainedGraphsModel::RootColumn), QStringLiteral("__main__.kept[*]"));
        QCOMPARE(cell(m, 0, RetainedGraphsModel::GraphsColumn), QStringLiteral("4"));
        QCOMPARE(cell(m, 0, RetainedGraphsModel::FirstSeenColumn), QStringLiteral("iteration 4"));
        const QString growth = cell(m, 0, RetainedGraphsModel::GrowthColumn);
        QVERIFY2(growth.startsWith(QStringLiteral("+1 graph, +")) && growth.endsWith(QStringLiteral(" per eval iteration since iteration 4")),
                 qPrintable(growth));
        QCOMPARE(m.rowCount(m.index(0, 0)), 4);
        QCOMPARE(cell(m, 1, RetainedGraphsModel::RootColumn), QStringLiteral("__main__.loss"));
        QVERIFY(cell(m, 1, RetainedGraphsModel::SavedColumn).contains(QStringLiteral("backward ran")));
        QVERIFY(v.summaryText().contains(QStringLiteral("<b>5</b> graphs under 2 names")));

        // back to iteration 3: only the loss; iteration 4: the first kept output is new
        QSignalSpy changed(&doc, &GraphScansDocument::currentScanChanged);
        v.scanSlider()->setValue(2);
        QCOMPARE(changed.count(), 1);
        QCOMPARE(doc.currentIteration(), 3);
        QCOMPARE(m.rowCount(), 1);
        doc.nextScan();
        QCOMPARE(v.scanSlider()->value(), 3);
        QCOMPARE(m.rowCount(), 2);
        QCOMPARE(cell(m, 0, RetainedGraphsModel::RootColumn), QStringLiteral("__main__.kept[0]"));
        QCOMPARE(cell(m, 0, RetainedGraphsModel::GrowthColumn), QStringLiteral("new at iteration 4"));
        // iteration 7 (train): the group stays at 2 graphs, its growth still per eval iteration
        doc.setCurrentIteration(7);
        QCOMPARE(cell(m, 0, RetainedGraphsModel::GraphsColumn), QStringLiteral("2"));
        QVERIFY(cell(m, 0, RetainedGraphsModel::GrowthColumn).contains(QStringLiteral("per eval iteration")));
    }

    void selectingARootSelectsItsGraph() {
        if (!graphfixture::real().scans) QSKIP(qPrintable(graphfixture::real().why));
        GraphScansDocument doc(graphfixture::real().scans);
        RetainedGraphsView v;
        v.setGraphScans(&doc);
        v.show();
        QSignalSpy selected(&doc, &GraphScansDocument::graphSelected);
        const QAbstractItemModel& m = *v.proxy();
        // the loss row: a single root
        const QModelIndex loss = m.index(1, 0);
        v.tree()->selectionModel()->setCurrentIndex(loss, QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
        QCOMPARE(selected.count(), 1);
        QCOMPARE(doc.selectedGraphData()->root, std::string("__main__.loss"));
        // a group row: its largest root, whose row is then selected
        v.tree()->selectionModel()->setCurrentIndex(m.index(0, 0), QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
        QCOMPARE(doc.selectedGraphData()->pattern, std::string("__main__.kept[*]"));
        QVERIFY(v.tree()->currentIndex().parent().isValid());
        // selecting from the document moves the row
        doc.selectGraph(2);
        QCOMPARE(v.tree()->currentIndex().data(RetainedGraphsModel::GraphRole).toInt(), 2);
    }
};

MEMLENS_GUI_TEST_MAIN(TestRetainedGraphsView)
#include "tst_retainedgraphsview.moc"
