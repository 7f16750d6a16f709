// EventsView: the filter bar narrows the rows (action, size range, search), the document's
// selected range applies, long traces filter on a worker (a newer filter supersedes the running
// one), and the table's current row and the document's current entry follow each other.
#include "DocumentFixture.h"
#include "Idle.h"
#include "QtTestMain.h"

#include "events/EventsModel.h"
#include "events/EventsView.h"

#include <QAbstractItemModelTester>
#include <QLabel>
#include <QScrollBar>
#include <QSignalSpy>
#include <QTableView>
#include <QApplication>
#include <QtTest>

using namespace memlens::views;
using namespace tracetest;
namespace model = memlens::model;

namespace {

// n entries: alloc / free_completed pairs over 1000 addresses, sizes 1..7 KiB, built in memory.
std::shared_ptr<LoadedSnapshot> bigTrace(int n) {
    model::Snapshot s;
    model::DeviceData d;
    d.hasTraceList = true;
    auto& t = d.trace;
    t.reserve(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) {
        const int k = i / 2;
        t.action.push_back(i % 2 == 0 ? model::Action::Alloc : model::Action::FreeCompleted);
        t.actionName.push_back(0);
        t.flags.push_back(model::TraceColumns::HasAddr | model::TraceColumns::HasTime);
        t.addr.push_back(slot(k % 1000));
        t.size.push_back(static_cast<uint64_t>(k % 7 + 1) * KiB);
        t.stream.push_back(0);
        t.timeUs.push_back(i);
        t.stack.push_back(0);
        t.compileContext.push_back(0);
        t.userMetadata.push_back(0);
    }
    s.devices.push_back(std::move(d));
    return LoadedSnapshot::fromSnapshot(std::move(s), "big.pickle");
}

std::vector<int64_t> shownEntries(const EventsModel& m) {
    std::vector<int64_t> out;
    for (int r = 0; r < m.rowCount(); ++r) out.push_back(m.entryAt(r));
    return out;
}

} // namespace

class TestEventsView : public QObject {
    Q_OBJECT

private slots:
    void filterBar() {
        auto doc = document(smallTrace());
        EventsView view;
        QAbstractItemModelTester tester(view.model(), QAbstractItemModelTester::FailureReportingMode::QtTest);
        QSignalSpy applied(&view, &EventsView::filterApplied);
        view.setDocument(doc.get());
        QCOMPARE(view.model()->rowCount(), 12);
        QCOMPARE(EventsView::actionChoices().value(1), QStringLiteral("alloc"));
        view.setActionChoice(1);
        QCOMPARE(shownEntries(*view.model()), (std::vector<int64_t>{1, 2, 3, 7}));
        view.setSizeRange(QStringLiteral("512k"), QStringLiteral("1 MiB"));
        QCOMPARE(shownEntries(*view.model()), (std::vector<int64_t>{1, 2, 7}));
        view.setSizeRange(QString(), QString());
        view.setSearchText(QStringLiteral("activations"));
        QCOMPARE(shownEntries(*view.model()), (std::vector<int64_t>{2, 7}));
        view.setActionChoice(0);
        QCOMPARE(shownEntries(*view.model()), (std::vector<int64_t>{2, 4, 5, 7}));
        // the document's range applies on top
        doc->setSelection(3, 6);
        QCOMPARE(shownEntries(*view.model()), (std::vector<int64_t>{4, 5}));
        view.setSearchText(QString());
        QCOMPARE(shownEntries(*view.model()), (std::vector<int64_t>{3, 4, 5, 6}));
        doc->resetSelection();
        QCOMPARE(view.model()->rowCount(), 12);
        QVERIFY(applied.count() >= 8);
        // an unreadable size is ignored (and marked)
        view.setSizeRange(QStringLiteral("lots"), QString());
        QCOMPARE(view.model()->rowCount(), 12);
    }

    void currentRowAndCurrentEntryFollowEachOther() {
        auto doc = document(smallTrace());
        EventsView view;
        view.setDocument(doc.get());
        view.resize(800, 400);
        view.show();
        QVERIFY(QTest::qWaitForWindowExposed(&view));
        // the document starts at its last entry: that row is current
        QCOMPARE(view.table()->currentIndex().row(), 11);
        doc->setCurrentEvent(4);
        QCOMPARE(view.table()->currentIndex().row(), 4);
        QSignalSpy selected(doc.get(), &SnapshotDocument::allocationSelected);
        view.table()->setCurrentIndex(view.model()->index(2, 0));
        QCOMPARE(doc->currentEvent(), int64_t(2));
        QCOMPARE(selected.count(), 1);
        QCOMPARE(doc->selectedStack(), doc->deviceData().trace.stack[2]);
        QVERIFY(doc->selectedDescription().contains(QStringLiteral("0x7f0000100000")));
        // keyboard: down to the next row
        view.table()->setFocus();
        QTest::keyClick(view.table(), Qt::Key_Down);
        QCOMPARE(doc->currentEvent(), int64_t(3));
        // a current entry that is filtered out leaves no row selected
        view.setActionChoice(5);  // oom
        doc->setCurrentEvent(1);
        QVERIFY(!view.table()->selectionModel()->hasSelection());
        view.setDocument(nullptr);
        QCOMPARE(view.model()->rowCount(), 0);
    }

    // The table holds a window of the rows (EventsModel::windowRows): scrolled to its end the
    // window moves on by half, the entry at the top staying at the top; scrolled back to its start
    // it moves back; a current entry outside it brings the window to it. The count says which rows
    // are there.
    void theRowsAreAWindowThatMovesWithTheScrollingAndTheCurrentEntry() {
        const int n = 1000;
        auto loaded = bigTrace(n);
        SnapshotDocument doc(loaded);
        EventsView view;
        QAbstractItemModelTester tester(view.model(), QAbstractItemModelTester::FailureReportingMode::QtTest);
        view.model()->setWindowRows(200);
        view.setDocument(&doc);
        view.resize(800, 400);
        view.show();
        QVERIFY(QTest::qWaitForWindowExposed(&view));
        doc.setCurrentEvent(10);
        QCOMPARE(view.model()->shownCount(), int64_t(n));
        QCOMPARE(view.model()->rowCount(), 200);
        QCOMPARE(view.model()->windowFirst(), int64_t(0));
        QCOMPARE(view.model()->entryAt(view.table()->currentIndex().row()), int64_t(10));
        const auto countText = [&view] {
            QStringList labels;
            for (const QLabel* l : view.findChildren<QLabel*>()) labels << l->text();
            return labels.join(QLatin1Char('|'));
        };
        QVERIFY2(countText().contains(QStringLiteral("rows 1–200")), qPrintable(countText()));

        QScrollBar* bar = view.table()->verticalScrollBar();
        QVERIFY(bar->maximum() > 0);
        bar->setValue(bar->maximum() - 1);
        const int64_t top = view.model()->entryAt(view.table()->rowAt(0));
        bar->setValue(bar->maximum());
        QCOMPARE(view.model()->windowFirst(), int64_t(100));
        QCOMPARE(view.model()->entryAt(0), int64_t(100));
        QCOMPARE(view.model()->entryAt(view.table()->rowAt(0)), top);  // the view did not jump
        QVERIFY2(countText().contains(QStringLiteral("rows 101–300")), qPrintable(countText()));
        // on to the end: the last window ends with the last entry
        for (int k = 0; k < 20 && view.model()->windowFirst() < n - 200; ++k) bar->setValue(bar->maximum());
        QCOMPARE(view.model()->windowFirst(), int64_t(n - 200));
        QCOMPARE(view.model()->entryAt(199), int64_t(n - 1));
        // back at the top of the window: it moves back by half
        bar->setValue(bar->minimum());
        QCOMPARE(view.model()->windowFirst(), int64_t(n - 300));

        // the current entry, outside the window: the window comes to it and its row is current
        doc.setCurrentEvent(3);
        QVERIFY(view.model()->rowOf(3) >= 0);
        QCOMPARE(view.model()->entryAt(view.table()->currentIndex().row()), int64_t(3));
        doc.setCurrentEvent(777);
        QCOMPARE(view.model()->entryAt(view.table()->currentIndex().row()), int64_t(777));
        // a row picked in the table is the document's current entry, with the window moved
        view.table()->setCurrentIndex(view.model()->index(view.model()->rowOf(777) + 5, 0));
        QCOMPARE(doc.currentEvent(), int64_t(782));
    }

    // A filter on the worker whose device has no data (the document shows a device the snapshot
    // lacks) ends like the same filter on the GUI thread: no rows, the count says so. It used to
    // post nothing and stay "filtering…" forever.
    void aFilterWithTheDeviceGoneEndsInADefinedState() {
        auto doc = document(smallTrace());
        EventsView view;
        view.setBackgroundRows(-1);  // every filter on the worker
        QSignalSpy applied(&view, &EventsView::filterApplied);
        view.setDocument(doc.get());
        view.setActionChoice(1);  // alloc only: a filter, not just a range
        QVERIFY(view.isFiltering());
        QTRY_VERIFY_WITH_TIMEOUT(!view.isFiltering(), 20000);
        QVERIFY(view.model()->rowCount() > 0);
        applied.clear();
        doc->setDevice(7);  // no such device in the snapshot
        QVERIFY(view.isFiltering());
        QTRY_VERIFY_WITH_TIMEOUT(!view.isFiltering(), 20000);
        QCOMPARE(applied.count(), 1);
        QCOMPARE(view.model()->rowCount(), 0);
        QStringList labels;
        for (const QLabel* l : view.findChildren<QLabel*>()) labels << l->text();
        QVERIFY2(!labels.join(QLatin1Char('|')).contains(QStringLiteral("filtering")), qPrintable(labels.join(QLatin1Char('|'))));
        QVERIFY2(labels.contains(QStringLiteral("0 entries")), qPrintable(labels.join(QLatin1Char('|'))));
    }

    void longTracesFilterOnAWorker() {
        const int n = static_cast<int>(EventsView::kBackgroundRows) + 20000;
        auto loaded = bigTrace(n);
        SnapshotDocument doc(loaded);
        EventsView view;
        QAbstractItemModelTester tester(view.model(), QAbstractItemModelTester::FailureReportingMode::QtTest);
        view.setDocument(&doc);
        QCOMPARE(view.model()->rowCount(), n);  // no filter: a range, at once
        QSignalSpy applied(&view, &EventsView::filterApplied);
        view.setSizeRange(QStringLiteral("6k"), QString());  // superseded before it finishes
        QVERIFY(view.isFiltering());
        view.setActionChoice(1);  // alloc only, still >= 6 KiB
        QVERIFY(view.isFiltering());
        QVERIFY(applied.wait(20000));
        // both filters over (the global pool idle) and what they posted delivered: only then count
        QVERIFY(memlens::test::drainGlobalThreadPool());
        QCOMPARE(applied.count(), 1);  // the first filter's result never arrived
        QVERIFY(!view.isFiltering());
        EventFilter expect;
        expect.actions = EventFilter::bit(model::Action::Alloc);
        expect.minSize = 6 * KiB;
        QCOMPARE(shownEntries(*view.model()), expect.apply(*loaded->snapshot, loaded->snapshot->devices[0].trace));
        // clearing the filters is immediate again
        view.setSizeRange(QString(), QString());
        view.setActionChoice(0);
        QVERIFY(!view.isFiltering());
        QCOMPARE(view.model()->rowCount(), n);
    }

    // torch 2.10+ labels: the user metadata and compile context columns appear when the trace has
    // some, and the search finds entries by them
    void metadataColumnsAndSearch() {
        auto doc = viewtest::newerDocument();
        EventsView view;
        view.setDocument(doc.get());
        QVERIFY(!view.table()->isColumnHidden(EventsModel::MetadataColumn));
        QVERIFY(!view.table()->isColumnHidden(EventsModel::CompileContextColumn));
        QCOMPARE(view.model()->headerData(EventsModel::MetadataColumn, Qt::Horizontal).toString(), QStringLiteral("User metadata"));
        const int row = view.model()->rowOf(1);
        QCOMPARE(view.model()->index(row, EventsModel::MetadataColumn).data().toString(), QStringLiteral("phase=train step=1"));
        QCOMPARE(view.model()->index(row, EventsModel::CompileContextColumn).data().toString(), QString());  // 'N/A'
        QCOMPARE(view.model()->index(view.model()->rowOf(2), EventsModel::CompileContextColumn).data().toString(),
                 QStringLiteral("Torch-Compiled Region: 0/0"));
        view.setSearchText(QStringLiteral("phase=EVAL"));
        QCOMPARE(shownEntries(*view.model()), (std::vector<int64_t>{2, 3}));
        view.setSearchText(QStringLiteral("compiled region"));
        QCOMPARE(shownEntries(*view.model()), (std::vector<int64_t>{2, 3}));
        view.setSearchText(QString());
        // a trace without them keeps the table as it was
        auto plain = document(smallTrace());
        view.setDocument(plain.get());
        QVERIFY(view.table()->isColumnHidden(EventsModel::MetadataColumn));
        QVERIFY(view.table()->isColumnHidden(EventsModel::CompileContextColumn));
    }

};

MEMLENS_GUI_TEST_MAIN(TestEventsView)
#include "tst_eventsview.moc"
