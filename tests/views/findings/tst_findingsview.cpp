// The Findings dock. On the bundled example (resources/make_example.py plants a kept graph: three
// 8 MiB tensors and a scalar per iteration for 30 iterations, and ends in an out-of-memory from
// fragmentation) it names both, and selecting the kept graph marks its 30 x 4 blocks in the block
// map, selects their stack and the range from the first of them to the end. A loop without a
// mistake (the job trace of tests/support/JobTrace.h) has no finding and no banner line.
#include "QtTestMain.h"
#include "DocumentFixture.h"
#include "JobTrace.h"

#include "core/LoadedSnapshot.h"
#include "document/JobTracker.h"
#include "document/SnapshotDocument.h"
#include "findings/FindingsView.h"
#include "whatif/WhatIfView.h"

#include <QSignalSpy>
#include <QtTest>

using namespace memlens;
using namespace memlens::views;

namespace {

bool waitForReport(FindingsView& v) {
    QSignalSpy changed(&v, &FindingsView::reportChanged);
    if (v.report() && !v.isBusy()) return true;
    while (!v.report() || v.isBusy())
        if (!changed.wait(120000)) return false;
    return true;
}

int rowOf(const FindingsView& v, const std::string& rule) {
    for (size_t i = 0; i < v.report()->findings.size(); ++i)
        if (v.report()->findings[i].rule == rule) return static_cast<int>(i);
    return -1;
}

bool stackHasLine(const model::Snapshot& s, model::StackId stack, const char* file, uint64_t line) {
    for (const model::FrameId* f = s.stackBegin(stack); f != s.stackBegin(stack) + s.stackSize(stack); ++f)
        if (s.str(s.frames[*f].filename).ends_with(file) && s.frames[*f].line == line) return true;
    return false;
}

} // namespace

class TestFindingsView : public QObject {
    Q_OBJECT

private slots:
    void theExampleHasAKeptGraphAndAFragmentationOom() {
        auto doc = viewtest::exampleDocument();
        FindingsView v;
        v.setDocument(doc.get());
        QVERIFY(waitForReport(v));
        const int kept = rowOf(v, "graph-kept");
        const int frag = rowOf(v, "fragmentation");
        QVERIFY2(kept >= 0, qPrintable(v.bannerText()));
        QVERIFY(frag >= 0);
        QVERIFY2(v.bannerText().contains(QStringLiteral("train.py:81")), qPrintable(v.bannerText()));
        QVERIFY(v.summaryText().contains(QStringLiteral("not the batch size")));

        v.selectFinding(kept);
        QCOMPARE(v.selectedFinding(), kept);
        QVERIFY(v.detailText().contains(QStringLiteral("Fix:")));
        // 30 iterations x (three 8 MiB tensors + one scalar), all alive at the end
        QCOMPARE(static_cast<int>(doc->markedAddresses().addresses.size()), 30 * 4);
        QCOMPARE(static_cast<int>(doc->markedOnDevice().size()), 30 * 4);
        QCOMPARE(doc->currentEvent(), doc->entryCount() - 1);
        QVERIFY(doc->selection().has_value());
        QVERIFY(stackHasLine(doc->snapshot(), doc->selectedStack(), "train.py", 81));

        // the out-of-memory: the current entry becomes the oom entry
        v.selectFinding(frag);
        const auto& t = doc->deviceData().trace;
        QCOMPARE(t.action[static_cast<size_t>(doc->currentEvent())], model::Action::Oom);
    }

    void whatIfTheKeptGraphWereFixed() {
        auto doc = viewtest::exampleDocument();
        FindingsView v;
        WhatIfView whatIf;
        v.setDocument(doc.get());
        whatIf.setDocument(doc.get());
        QObject::connect(&v, &FindingsView::fixRequested, &whatIf, [&whatIf](const model::FindingFix& fix) { whatIf.runFix(fix); });
        QVERIFY(waitForReport(v));
        v.selectFinding(rowOf(v, "graph-kept"));
        QVERIFY(v.canSimulateFix());
        QSignalSpy finished(&whatIf, &WhatIfView::finished);
        v.requestFix();
        QVERIFY(finished.count() > 0 || finished.wait(120000));
        QVERIFY2(whatIf.result(), qPrintable(whatIf.errorText()));
        // the recording dies at its oom entry; with the kept graphs freed every iteration it does not
        QVERIFY(whatIf.result()->recording.firstOom.has_value());
        QVERIFY(!whatIf.result()->simulation.firstOom.has_value());
        // 30 iterations x 24 MiB (and 30 scalars) freed at the end of their iteration
        QVERIFY(std::llabs(static_cast<long long>(whatIf.result()->edits.bytesFreedEarly) - 30LL * 24 * 1024 * 1024) <= 30 * 512);
    }

    void aCorrectLoopHasNoFinding() {
        jobtrace::Job job;
        auto loaded = LoadedSnapshot::fromSnapshot(synth::read(jobtrace::pickle(job)), "loop.pickle");
        SnapshotDocument doc(loaded);
        FindingsView v;
        v.setDocument(&doc);
        QVERIFY(waitForReport(v));
        QCOMPARE(v.findingCount(), 0);
        QVERIFY(v.bannerText().isEmpty());
    }

    void aLeakingLoopIsFoundWhateverTheDevice() {
        jobtrace::Job job;
        job.cacheGrowth = 1 * jobtrace::MiB;
        auto loaded = LoadedSnapshot::fromSnapshot(synth::read(jobtrace::pickle(job)), "leak.pickle");
        SnapshotDocument doc(loaded);
        FindingsView v;
        v.setDocument(&doc);
        QVERIFY(waitForReport(v));
        const int row = rowOf(v, "growth");
        QVERIFY(row >= 0);
        v.selectFinding(row);
        QCOMPARE(static_cast<int>(doc.markedOnDevice().size()), job.iterations);
        // a new document replaces the report; the old one is dropped
        v.setDocument(nullptr);
        QVERIFY(!v.report());
        QVERIFY(v.bannerText().isEmpty());
    }
};

MEMLENS_GUI_TEST_MAIN(TestFindingsView)
#include "tst_findingsview.moc"
