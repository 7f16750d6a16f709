// SnapshotDocument: the current entry, range selections with back and reset, the selected
// allocation, devices; every setter emits once per change and never for the same value. A
// QApplication: the state that comes later is checked in the views that show it.
#include "DocumentFixture.h"
#include "QtTestMain.h"

#include "blockmap/BlockMapView.h"
#include "breakdown/BreakdownView.h"

#include <QFileInfo>
#include <QSignalSpy>
#include <QtTest>

#include <future>

using namespace memlens::views;
using namespace tracetest;

class TestSnapshotDocument : public QObject {
    Q_OBJECT

private slots:
    void startsAtTheLastEntry() {
        auto doc = document(smallTrace());
        QCOMPARE(doc->entryCount(), int64_t(12));
        QCOMPARE(doc->currentEvent(), int64_t(11));
        QCOMPARE(doc->devices(), QVector<int>{0});
        QVERIFY(!doc->selection());
        QVERIFY(!doc->canGoBack());
        QCOMPARE(doc->fileName(), QStringLiteral("trace.pickle"));
        QCOMPARE(doc->lifetimes().size(), size_t(5));
        QCOMPARE(doc->markers().points().size(), size_t(2));
    }

    void currentEvent() {
        auto doc = document(smallTrace());
        QSignalSpy spy(doc.get(), &SnapshotDocument::currentEventChanged);
        doc->setCurrentEvent(4);
        doc->setCurrentEvent(4);
        QCOMPARE(spy.count(), 1);
        QCOMPARE(spy.at(0).at(0).value<int64_t>(), int64_t(4));
        QCOMPARE(doc->currentState().at, int64_t(4));
        doc->setCurrentEvent(1000);  // clamped
        QCOMPARE(doc->currentEvent(), int64_t(11));
        doc->setCurrentEvent(-7);
        QCOMPARE(doc->currentEvent(), int64_t(-1));
        QCOMPARE(spy.count(), 3);
    }

    void selectionBackAndReset() {
        auto doc = document(smallTrace());
        QSignalSpy spy(doc.get(), &SnapshotDocument::selectionChanged);
        doc->setSelection(2, 8);
        QCOMPARE(doc->selection(), std::make_optional(std::make_pair<int64_t, int64_t>(2, 8)));
        doc->setSelection(2, 8);  // the same again: nothing
        QCOMPARE(spy.count(), 1);
        doc->setSelection(6, 4);  // reversed
        QCOMPARE(doc->selection(), std::make_optional(std::make_pair<int64_t, int64_t>(4, 6)));
        doc->setSelection(-5, 100);  // clamped
        QCOMPARE(doc->selection(), std::make_optional(std::make_pair<int64_t, int64_t>(0, 11)));
        QCOMPARE(spy.count(), 3);
        QVERIFY(doc->canGoBack());
        doc->back();
        QCOMPARE(doc->selection(), std::make_optional(std::make_pair<int64_t, int64_t>(4, 6)));
        doc->back();
        QCOMPARE(doc->selection(), std::make_optional(std::make_pair<int64_t, int64_t>(2, 8)));
        doc->back();
        QVERIFY(!doc->selection());
        QCOMPARE(spy.count(), 6);
        doc->back();  // nothing left: no signal
        QCOMPARE(spy.count(), 6);
        doc->setSelection(1, 2);
        doc->setSelection(3, 4);
        doc->resetSelection();
        QVERIFY(!doc->selection());
        QVERIFY(!doc->canGoBack());
        QCOMPARE(spy.count(), 9);
        doc->resetSelection();
        QCOMPARE(spy.count(), 9);
        doc->setSelection(50, 60);  // entirely outside: ignored
        QVERIFY(!doc->selection());
    }

    void allocation() {
        auto doc = document(smallTrace());
        QSignalSpy spy(doc.get(), &SnapshotDocument::allocationSelected);
        const auto stack = doc->deviceData().trace.stack[1];
        doc->selectAllocation(stack, QStringLiteral("1 MiB at 0x7f0000000000"));
        QCOMPARE(spy.count(), 1);
        QCOMPARE(doc->selectedStack(), stack);
        QCOMPARE(doc->selectedDescription(), QStringLiteral("1 MiB at 0x7f0000000000"));
    }

    void deviceChangeClearsSelections() {
        auto doc = document(smallTrace());
        doc->setSelection(1, 3);
        QSignalSpy device(doc.get(), &SnapshotDocument::deviceChanged);
        QSignalSpy selection(doc.get(), &SnapshotDocument::selectionChanged);
        doc->setDevice(0);
        QCOMPARE(device.count(), 0);
        doc->setDevice(2);
        QCOMPARE(device.count(), 1);
        QCOMPARE(selection.count(), 1);
        QVERIFY(!doc->selection());
        QCOMPARE(doc->entryCount(), int64_t(0));
        QCOMPARE(doc->lifetimes().size(), size_t(0));
        QVERIFY(doc->markers().points().empty());
        QCOMPARE(doc->currentEvent(), int64_t(-1));
    }

    // a GPU opens first even when the pinned host memory is listed (and it is listed)
    void hostMemoryIsADeviceButNotTheFirst() {
        auto doc = viewtest::newerDocument();
        QCOMPARE(doc->device(), 0);
        QVERIFY(doc->devices().contains(memlens::model::kHostDevice));
        doc->setDevice(memlens::model::kHostDevice);
        QCOMPARE(doc->entryCount(), int64_t(6));
    }

    // The window's way for the timeline's bands: the allocations are paired on the job pool once
    // the document exists, the shown device's first; until then lifetimes() is empty.
    void lifetimesComeLater() {
        auto loaded = LoadedSnapshot::fromSnapshot(synth::read(picklize(smallTrace())), "trace.pickle", {},
                                                   StateHistories::Later);
        QVERIFY(loaded->lifetimes.empty());
        loaded->finalStatesLater.wait();  // the pairing follows the final state: here, there already
        SnapshotDocument doc(loaded);
        QSignalSpy ready(&doc, &SnapshotDocument::lifetimesReady);
        QVERIFY(!doc.isStatePending());
        QVERIFY(doc.isPairing());
        QCOMPARE(doc.lifetimes().size(), size_t(0));
        QVERIFY(ready.wait(60000));
        QVERIFY(!doc.isPairing());
        QCOMPARE(ready.count(), 1);
        // A, B, C, D and E, E allocated before the recording (its free has no alloc): first
        QCOMPARE(doc.lifetimes().size(), size_t(5));
        QVERIFY(doc.lifetimes()[0].allocatedBeforeRecording());
        QCOMPARE(doc.lifetimes()[0].end, int32_t(10));
        for (size_t i = 1; i < 5; ++i) QVERIFY(!doc.lifetimes()[i].allocatedBeforeRecording());
        QCOMPARE(doc.lifetimes()[1].begin, int32_t(1));  // A, alive to the end
        QCOMPARE(doc.lifetimes()[1].end, int32_t(12));
    }

    // The window's way for a large file: the document arrives before the final state (the load
    // goes on making it), shows nothing made up meanwhile and rewinds nothing on the GUI thread;
    // stateReady() brings that very state, and only then are the allocations paired.
    void stateComesLater() {
        auto made = LoadedSnapshot::fromSnapshot(synth::read(picklize(smallTrace())), "trace.pickle", {},
                                                 StateHistories::Later);
        QVERIFY(made->finalStatesLater.valid());
        const LoadedSnapshot::FinalStates states = made->finalStatesLater.get();
        auto loaded = std::make_shared<LoadedSnapshot>(*made);
        std::promise<LoadedSnapshot::FinalStates> promise;  // the load, still at work
        loaded->finalStatesLater = promise.get_future().share();
        SnapshotDocument doc(loaded);
        QSignalSpy ready(&doc, &SnapshotDocument::stateReady);
        QSignalSpy paired(&doc, &SnapshotDocument::lifetimesReady);
        QVERIFY(doc.isStatePending());
        QVERIFY(doc.isRewinding());
        QCOMPARE(doc.currentEvent(), int64_t(11));
        QVERIFY(doc.currentState().segments.empty());
        QCOMPARE(doc.currentState().reservedBytes, uint64_t(0));
        // kept, as any current state: currentState()'s reference outlives the call (an empty
        // state made for each call was freed on return; AddressSanitizer saw the read above)
        QCOMPARE(doc.currentStateShared().get(), doc.currentStateShared().get());
        QCOMPARE(&doc.currentState(), doc.currentStateShared().get());
        QCOMPARE(doc.currentState().at, int64_t(11));
        QVERIFY(!doc.finalStateOf(0));
        QVERIFY(!doc.isPairing());
        BlockMapView blocks;
        BreakdownView breakdown;
        blocks.setDocument(&doc);
        breakdown.setDocument(&doc);
        QVERIFY(blocks.isShowingPlaceholder());
        QVERIFY(breakdown.isShowingPlaceholder());
        promise.set_value(states);
        QVERIFY(ready.wait(10000));
        QCOMPARE(ready.count(), 1);
        QVERIFY(!doc.isStatePending());
        QCOMPARE(doc.currentStateShared().get(), states.at(0).get());  // the load's, not a copy
        // A (1 MiB) and D (768 KiB) live in the one 8 MiB segment
        QCOMPARE(doc.currentState().reservedBytes, kSegment);
        QCOMPARE(doc.currentState().allocatedBytes, 1 * MiB + 768 * KiB);
        QVERIFY(!blocks.isShowingPlaceholder());
        QVERIFY(!breakdown.isShowingPlaceholder());
        QVERIFY(paired.count() == 1 || paired.wait(60000));
        QCOMPARE(doc.lifetimes().size(), size_t(5));
    }

    // The window's way: the state histories are built after the document arrives. Until then
    // the current entry stays the last one, whose state is the file's own; one asked for
    // meanwhile becomes current once they are ready.
    void historiesComeLater() {
        const QString path = viewtest::fixture(viewtest::kOomFixture);
        if (!QFileInfo::exists(path)) QSKIP("real snapshots not found in " MEMLENS_SNAPSHOTS_DIR);
        const auto oom = viewtest::fixtureOom();
        QVERIFY2(oom, "the oracle found no oom entry");
        auto loaded = LoadedSnapshot::load(path.toStdString(), {}, StateHistories::Later);
        QVERIFY(loaded->histories.empty());
        SnapshotDocument doc(loaded);
        QSignalSpy stateReady(&doc, &SnapshotDocument::stateReady);
        doc.setDevice(oom->device);
        QVERIFY(doc.isRewinding());
        const int64_t last = doc.entryCount() - 1;
        QCOMPARE(doc.currentEvent(), last);
        // the final state, unless the load had it ready already, comes after the document
        if (doc.isStatePending()) QVERIFY(stateReady.wait(60000));
        // the file's own segments and blocks, as Python's pickle reads them
        const auto own = oracle::run({"state", path.toStdString(), "--device", std::to_string(oom->device)});
        QVERIFY2(own, "the oracle failed");
        QCOMPARE(doc.currentState().reservedBytes, own->at("reserved_bytes").get<uint64_t>());
        QCOMPARE(doc.currentState().allocatedBytes, own->at("allocated_bytes").get<uint64_t>());
        QVERIFY(doc.isRewinding());  // and that state needed no history

        QSignalSpy current(&doc, &SnapshotDocument::currentEventChanged);
        QSignalSpy ready(&doc, &SnapshotDocument::historiesReady);
        doc.setCurrentEvent(oom->index);
        QCOMPARE(doc.currentEvent(), last);  // not yet
        QCOMPARE(current.count(), 0);
        QVERIFY(ready.wait(120000));
        QVERIFY(!doc.isRewinding());
        QCOMPARE(current.count(), 1);
        QCOMPARE(doc.currentEvent(), oom->index);
        QCOMPARE(doc.currentState().reservedBytes, oom->reservedBytes);
        QCOMPARE(ready.count(), 1);
    }
};

MEMLENS_GUI_TEST_MAIN(TestSnapshotDocument)
#include "tst_snapshotdocument.moc"
