// AllocationSitesView with documents: trees built off the GUI thread at the current entry and
// over a selected range, superseded requests, C++ frames on and off, the search box, selecting a
// node, no document, and a real fixture.
#include "DocumentFixture.h"
#include "QtTestMain.h"

#include "common/ByteText.h"
#include "sites/AllocationSitesModel.h"
#include "sites/AllocationSitesView.h"

#include <QAbstractItemModelTester>
#include <QSortFilterProxyModel>
#include <QTextDocument>
#include <QTreeView>
#include <QApplication>
#include <QtTest>

using namespace memlens::views;
using Model = AllocationSitesModel;

class TestAllocationSitesView : public QObject {
    Q_OBJECT

    static QString plain(const QString& html) {
        QTextDocument d;
        d.setHtml(html);
        return d.toPlainText();
    }
    // Waits until the view has applied its newest request; false after 10 s.
    static bool settle(AllocationSitesView& v) {
        return QTest::qWaitFor([&] { return !v.isBusy(); }, 10000);
    }
    static QStringList roots(const QAbstractItemModel& m) {
        QStringList out;
        for (int r = 0; r < m.rowCount(); ++r) out << m.index(r, 0).data().toString();
        return out;
    }

private slots:
    void withoutADocument() {
        AllocationSitesView v;
        v.show();
        QVERIFY(!v.isBusy());
        QVERIFY(v.statusText().startsWith(QStringLiteral("No snapshot open")));
        QCOMPARE(v.bottomUpModel()->rowCount(), 0);
    }

    void liveAtTheCurrentEntry() {
        auto doc = viewtest::syntheticDocument();
        AllocationSitesView v;
        QAbstractItemModelTester t1(v.bottomUpProxy(), QAbstractItemModelTester::FailureReportingMode::QtTest);
        QAbstractItemModelTester t2(v.topDownProxy(), QAbstractItemModelTester::FailureReportingMode::QtTest);
        v.resize(900, 500);
        v.setDocument(doc.get());
        v.show();
        QVERIFY(settle(v));
        QCOMPARE(v.mode(), AllocationSitesView::Mode::CurrentEntry);
        QCOMPARE(plain(v.statusText()), QStringLiteral("Live after entry #7: 14 MiB in 2 allocations from 2 stacks"));
        QCOMPARE(roots(*v.bottomUpProxy()), (QStringList{"attention", "step"}));
        QCOMPARE(roots(*v.topDownProxy()), (QStringList{"train_step", "train_step"}));
        // the heaviest path is open
        QVERIFY(v.bottomUpTree()->isExpanded(v.bottomUpProxy()->index(0, 0)));
        // moving the current entry rebuilds: after entry 4, A, B and C are live
        doc->setCurrentEvent(4);
        QVERIFY(settle(v));
        QCOMPARE(plain(v.statusText()), QStringLiteral("Live after entry #4: 18 MiB in 3 allocations from 3 stacks"));
        QCOMPARE(v.bottomUpProxy()->rowCount(), 3);
        // with C++ frames every stack starts at the allocator's malloc
        v.setShowNativeFrames(true);
        QVERIFY(settle(v));
        QCOMPARE(v.bottomUpProxy()->rowCount(), 1);
        QVERIFY(roots(*v.bottomUpProxy()).front().endsWith(QStringLiteral("::malloc")));
    }

    // A build that runs out of memory on the worker ends in the one-line error in the status;
    // it used to escape the worker's runnable and end the process (std::terminate).
    void aBuildOutOfMemoryShowsTheError() {
        auto doc = viewtest::syntheticDocument();
        AllocationSitesView v;
        v.setBuildHookForTests([] { throw std::bad_alloc(); });
        QSignalSpy updated(&v, &AllocationSitesView::sitesUpdated);
        v.setDocument(doc.get());
        QVERIFY(v.isBusy());
        QVERIFY(v.waitForSites());
        QVERIFY(!v.isBusy());
        QCOMPARE(updated.count(), 1);
        QCOMPARE(plain(v.statusText()),
                 QStringLiteral("Allocation sites could not be built: not enough memory to build the allocation sites"));
        QCOMPARE(v.bottomUpModel()->rowCount(), 0);
        // the next request that succeeds shows the trees again
        v.setBuildHookForTests({});
        doc->setCurrentEvent(4);
        QVERIFY(v.waitForSites());
        QCOMPARE(plain(v.statusText()), QStringLiteral("Live after entry #4: 18 MiB in 3 allocations from 3 stacks"));
    }

    void rapidRequestsKeepOnlyTheLast() {
        auto doc = viewtest::syntheticDocument();
        AllocationSitesView v;
        v.setDocument(doc.get());
        QSignalSpy updated(&v, &AllocationSitesView::sitesUpdated);
        for (int64_t i = 0; i <= 7; ++i) doc->setCurrentEvent(i);
        doc->setCurrentEvent(2);
        QVERIFY(settle(v));
        QVERIFY(plain(v.statusText()).startsWith(QStringLiteral("Live after entry #2:")));
        QCOMPARE(roots(*v.bottomUpProxy()), (QStringList{"attention", "linear"}));
        // Nothing stale can arrive later: the view's pool runs one job at a time, in the order
        // asked, so every superseded job ended and posted its result before the newest one did,
        // and those results were dropped before the newest was applied. Only the newest was.
        QCOMPARE(updated.count(), 1);
    }

    void overTheSelectedRange() {
        auto doc = viewtest::syntheticDocument();
        AllocationSitesView v;
        v.setDocument(doc.get());
        QVERIFY(settle(v));
        doc->setSelection(0, 7);  // a selection switches to it
        QCOMPARE(v.mode(), AllocationSitesView::Mode::SelectedRange);
        QVERIFY(settle(v));
        QVERIFY(v.bottomUpModel()->isRange());
        QCOMPARE(plain(v.statusText()),
                 QStringLiteral("Entries #0\u2013#7: 18 MiB allocated in 3 allocations from 3 stacks; 14 MiB of it still live at #7"));
        // the current entry does not matter in range mode
        doc->setCurrentEvent(1);
        QVERIFY(settle(v));
        QVERIFY(plain(v.statusText()).startsWith(QStringLiteral("Entries #0\u2013#7")));
        doc->setSelection(3, 5);  // one alloc (C) in it
        QVERIFY(settle(v));
        QVERIFY(plain(v.statusText()).startsWith(QStringLiteral("Entries #3\u2013#5: 6 MiB allocated in 1 allocations")));
        v.setMode(AllocationSitesView::Mode::CurrentEntry);  // toggle back by hand
        QVERIFY(settle(v));
        QVERIFY(plain(v.statusText()).startsWith(QStringLiteral("Live after entry #1")));
        doc->resetSelection();
        QCOMPARE(v.mode(), AllocationSitesView::Mode::CurrentEntry);
    }

    void searching() {
        auto doc = viewtest::syntheticDocument();
        AllocationSitesView v;
        QAbstractItemModelTester t(v.bottomUpProxy(), QAbstractItemModelTester::FailureReportingMode::QtTest);
        v.setDocument(doc.get());
        doc->setCurrentEvent(4);
        QVERIFY(settle(v));
        v.setSearchText(QStringLiteral("ADAMW"));
        QTRY_COMPARE(v.bottomUpProxy()->rowCount(), 1);
        QCOMPARE(roots(*v.bottomUpProxy()), QStringList{"step"});
        v.setSearchText(QStringLiteral("train.py:88"));  // matches below the roots: their ancestors stay
        QTRY_COMPARE(v.bottomUpProxy()->rowCount(), 2);
        v.setSearchText(QString());
        QTRY_COMPARE(v.bottomUpProxy()->rowCount(), 3);
    }

    void selectingANodeSelectsItsStack() {
        auto doc = viewtest::syntheticDocument();
        AllocationSitesView v;
        v.resize(900, 500);
        v.setDocument(doc.get());
        v.show();
        QVERIFY(settle(v));
        QSignalSpy selected(doc.get(), &SnapshotDocument::allocationSelected);
        v.bottomUpTree()->setCurrentIndex(v.bottomUpProxy()->index(0, 0));  // attention: B
        QCOMPARE(selected.count(), 1);
        QCOMPARE(doc->selectedStack(), doc->deviceData().trace.stack[2]);
        QCOMPARE(doc->selectedDescription(), QStringLiteral("attention (/home/me/model.py:57): 8 MiB in 1 allocations"));
    }

    void documentGoesAway() {
        auto doc = viewtest::syntheticDocument();
        auto v = std::make_unique<AllocationSitesView>();
        v->setDocument(doc.get());
        doc.reset();  // mid-computation, maybe
        QVERIFY(settle(*v));
        QCOMPARE(v->bottomUpModel()->rowCount(), 0);
        v.reset();  // and the view with a job possibly queued
    }

    void realFixture() {
        auto doc = viewtest::fixtureDocument();
        if (!doc) QSKIP("no real snapshots");
        const auto oom = viewtest::fixtureOom();  // device, entry and live bytes from Python's pickle
        QVERIFY2(oom, "the oracle found no oom entry in the fixture");
        AllocationSitesView v;
        QAbstractItemModelTester t1(v.bottomUpProxy(), QAbstractItemModelTester::FailureReportingMode::QtTest);
        v.resize(1000, 600);
        v.setDocument(doc.get());
        v.show();
        doc->setDevice(oom->device);
        doc->setCurrentEvent(oom->index);
        QVERIFY(settle(v));
        const QString expected = QStringLiteral("Live after entry #%1: %2").arg(oom->index).arg(formatBytes(double(oom->liveBytes)));
        QVERIFY2(plain(v.statusText()).startsWith(expected), qPrintable(v.statusText() + QStringLiteral(" / expected ") + expected));
        QVERIFY(v.bottomUpProxy()->rowCount() > 5);
        doc->setSelection(0, doc->entryCount() - 1);
        QVERIFY(settle(v));
        QVERIFY(v.bottomUpModel()->isRange());
        QVERIFY(v.topDownProxy()->rowCount() > 0);
    }
};

MEMLENS_GUI_TEST_MAIN(TestAllocationSitesView)
#include "tst_allocationsitesview.moc"
