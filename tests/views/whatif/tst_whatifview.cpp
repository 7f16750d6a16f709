// The What-if dock on the bundled example (a fragmentation out-of-memory at its last entry):
// unchanged settings reproduce the recording (its peak, its oom entry, its state at an entry, all
// read from the file); expandable segments remove the oom; bad values are refused in one line;
// the simulated curves and state reach the timeline and the block map.
#include "QtTestMain.h"
#include "DocumentFixture.h"

#include "blockmap/BlockMapCanvas.h"
#include "blockmap/BlockMapView.h"
#include "document/JobTracker.h"
#include "document/SnapshotDocument.h"
#include "timeline/QCustomPlotInclude.h"
#include "timeline/TimelineView.h"
#include "whatif/WhatIfView.h"

#include <QApplication>
#include <QSignalSpy>
#include <QtTest>

using namespace memlens;
using namespace memlens::views;

namespace {

// The recording's first oom entry, read from the trace.
int64_t firstOomEntry(const SnapshotDocument& doc) {
    const auto& t = doc.deviceData().trace;
    for (size_t i = 0; i < t.rows(); ++i)
        if (t.action[i] == model::Action::Oom) return static_cast<int64_t>(i);
    return -1;
}

// "address+size" of every block that holds memory (allocated, pending free, before recording).
QStringList allocatedBlocks(const model::DeviceState& st) {
    QStringList out;
    for (const auto& seg : st.segments)
        for (const auto& b : seg.blocks)
            if (b.kind != model::StateBlockKind::Free) out << QStringLiteral("%1+%2").arg(b.address).arg(b.size);
    out.sort();
    return out;
}

QStringList segmentSpans(const model::DeviceState& st) {
    QStringList out;
    for (const auto& seg : st.segments) out << QStringLiteral("%1+%2").arg(seg.address).arg(seg.totalSize);
    out.sort();
    return out;
}

bool runAndWait(WhatIfView& v) {
    QSignalSpy finished(&v, &WhatIfView::finished);
    if (!v.run()) return false;
    return finished.count() > 0 || finished.wait(120000);
}

} // namespace

class TestWhatIfView : public QObject {
    Q_OBJECT

private slots:
    void unchangedReplayReproducesTheRecording() {
        auto doc = viewtest::exampleDocument();
        const int64_t oom = firstOomEntry(*doc);
        QVERIFY(oom >= 0);
        WhatIfView v;
        v.setDocument(doc.get());
        QVERIFY(runAndWait(v));
        QVERIFY2(v.errorText().isEmpty(), qPrintable(v.errorText()));
        const auto r = v.result();
        QVERIFY(r);
        QCOMPARE(r->simulation.peakReserved, r->recording.peakReserved);
        QVERIFY(r->simulation.firstOom);
        QCOMPARE(r->simulation.firstOom->entry, oom);
        QVERIFY2(v.verdictText().startsWith(QStringLiteral("Replayed unchanged the peak reserved stays at")), qPrintable(v.verdictText()));
        QVERIFY(v.verdictText().contains(QStringLiteral("#%1 still happens").arg(oom)));
        QCOMPARE(v.rowTexts().size(), 9);
    }

    void expandableSegmentsAvoidTheFragmentationOom() {
        auto doc = viewtest::exampleDocument();
        const int64_t oom = firstOomEntry(*doc);
        WhatIfView v;
        v.setDocument(doc.get());
        v.setExpandableSegments(true);
        QVERIFY(runAndWait(v));
        QVERIFY(v.result());
        QVERIFY(v.result()->recording.firstOom);
        QVERIFY(!v.result()->simulation.firstOom);
        QVERIFY2(v.verdictText().startsWith(QStringLiteral("With expandable_segments:True")), qPrintable(v.verdictText()));
        QVERIFY(v.verdictText().contains(QStringLiteral("the out-of-memory at entry #%1 does not happen").arg(oom)));
    }

    void badValuesAreRefusedInOneLine() {
        auto doc = viewtest::exampleDocument();
        WhatIfView v;
        v.setDocument(doc.get());
        QSignalSpy finished(&v, &WhatIfView::finished);
        v.setSettingText(QStringLiteral("max_split_size_mb"), QStringLiteral("lots"));
        QVERIFY(!v.run());
        QVERIFY(!v.errorText().isEmpty());
        QVERIFY(!v.errorText().contains(QLatin1Char('\n')));
        QVERIFY(!v.isBusy());
        v.setSettingText(QStringLiteral("max_split_size_mb"), QString());
        v.setOtherSettings(QStringLiteral("no_such_key:1"));
        QVERIFY(!v.run());
        QVERIFY(v.errorText().contains(QStringLiteral("no_such_key")));
        v.setOtherSettings(QString());
        v.setCapacityText(QStringLiteral("big"));
        QVERIFY(!v.run());
        QVERIFY(JobTracker::waitForAllIdle());
        QCOMPARE(finished.count(), 0);
        QVERIFY(!v.result());
    }

    void simulatedCurvesOnTheTimeline() {
        auto doc = viewtest::exampleDocument();
        TimelineView timeline;
        timeline.setDocument(doc.get());
        WhatIfView v;
        v.setDocument(doc.get());
        connect(&v, &WhatIfView::simulatedSeriesChanged, &timeline, &TimelineView::setSimulatedSeries);
        v.setExpandableSegments(true);
        QVERIFY(runAndWait(v));
        QVERIFY(!timeline.simulatedSeries().empty());
        QCOMPARE(timeline.simulatedSeries().size(), v.result()->simulation.series.size());
        QVERIFY(timeline.simulatedReservedGraph()->dataCount() > 0);
        v.setDrawOnTimeline(false);
        QVERIFY(timeline.simulatedSeries().empty());
        QCOMPARE(timeline.simulatedReservedGraph()->dataCount(), 0);
        v.setDrawOnTimeline(true);
        QVERIFY(!timeline.simulatedSeries().empty());
        // another device or document: the curves go away
        v.setDocument(nullptr);
        QVERIFY(timeline.simulatedSeries().empty());
    }

    void simulatedStateInTheBlockMapEqualsTheRecordedOneWhenUnchanged() {
        auto doc = viewtest::exampleDocument();
        BlockMapView blocks;
        blocks.setDocument(doc.get());
        WhatIfView v;
        v.setDocument(doc.get());
        connect(&v, &WhatIfView::simulatedStateChanged, &blocks, &BlockMapView::setSimulatedState);
        QVERIFY(runAndWait(v));
        QSignalSpy state(&v, &WhatIfView::simulatedStateChanged);
        const int64_t entry = doc->entryCount() / 2;
        doc->setCurrentEvent(entry);
        v.setShowInBlockMap(true);
        QVERIFY(JobTracker::waitForAllIdle());
        QVERIFY(blocks.isShowingSimulated());
        QVERIFY(blocks.totalsText().contains(QStringLiteral("Simulated")));
        const model::DeviceState& recorded = doc->currentState();
        const model::DeviceState* simulated = blocks.canvas()->state();
        QVERIFY(simulated);
        QCOMPARE(simulated->at, entry);
        QCOMPARE(simulated->reservedBytes, recorded.reservedBytes);
        QCOMPARE(simulated->allocatedBytes, recorded.allocatedBytes);  // pending frees are still allocated
        // block by block: every segment and every allocated block where the recording has it
        QCOMPARE(allocatedBlocks(*simulated), allocatedBlocks(recorded));
        QCOMPARE(segmentSpans(*simulated), segmentSpans(recorded));
        // moving on: the recorded state until the simulation of the new entry arrives, then that
        doc->setCurrentEvent(entry + 1);
        QVERIFY(JobTracker::waitForAllIdle());
        QCOMPARE(blocks.canvas()->state()->at, entry + 1);
        QVERIFY(blocks.isShowingSimulated());
        v.setShowInBlockMap(false);
        QVERIFY(!blocks.isShowingSimulated());
    }
};

MEMLENS_GUI_TEST_MAIN(TestWhatIfView)
#include "tst_whatifview.moc"
