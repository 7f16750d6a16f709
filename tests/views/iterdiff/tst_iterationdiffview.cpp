// The Iteration diff dock on a training loop written as a trace with a kept graph planted (two
// tensors of 3 and 5 MiB from train.py:81 kept every iteration, tests/support/JobTrace.h): what
// iterations N..M leave alive is N..M times 8 MiB, plus the optimizer state the first step makes
// (2 x 3 parameters of 1 MiB); a row's survivors are marked in the block map.
#include "QtTestMain.h"
#include "JobTrace.h"

#include "core/LoadedSnapshot.h"
#include "document/SnapshotDocument.h"
#include "iterdiff/IterationDiffView.h"

#include <QSignalSpy>
#include <QtTest>

using namespace memlens;
using namespace memlens::views;
using jobtrace::MiB;

namespace {

bool waitFinished(IterationDiffView& v, QSignalSpy& spy, int count) {
    while (spy.count() < count)
        if (!spy.wait(60000)) return false;
    return !v.isBusy();
}

} // namespace

class TestIterationDiffView : public QObject {
    Q_OBJECT

private slots:
    void survivorsOfARangeOfIterations() {
        jobtrace::Job job;
        job.graphKept = {3 * MiB, 5 * MiB};
        job.annotate = false;  // iterations from the trace's pattern
        auto loaded = LoadedSnapshot::fromSnapshot(synth::read(jobtrace::pickle(job)), "loop.pickle");
        SnapshotDocument doc(loaded);
        IterationDiffView v;
        QSignalSpy finished(&v, &IterationDiffView::finished);
        v.setDocument(&doc);
        QVERIFY(waitFinished(v, finished, 1));
        QCOMPARE(v.iterations().iterations.size(), static_cast<size_t>(job.iterations));
        // all of them: 8 x 8 MiB kept, and the optimizer's state (6 x 1 MiB) from the first step
        QVERIFY(v.result());
        QCOMPARE(v.result()->bytes, static_cast<uint64_t>(job.iterations) * 8 * MiB + 6 * MiB);
        QCOMPARE(v.rowCount(), 3);

        QVERIFY(v.compare(2, 4));
        QVERIFY(waitFinished(v, finished, 2));
        QCOMPARE(v.result()->bytes, 3 * 8 * MiB);
        QCOMPARE(v.rowCount(), 2);
        v.selectRow(0);  // sorted by bytes: the 5 MiB tensors
        QCOMPARE(static_cast<int>(doc.markedOnDevice().size()), 3);
        QCOMPARE(doc.currentEvent(), v.result()->aliveAfter);

        // the timeline's selection over iterations 5 and 6
        const auto& its = v.iterations().iterations;
        doc.setSelection(its[4].firstEntry + 1, its[5].lastEntry - 1);
        QVERIFY(v.compareSelection());
        QVERIFY(waitFinished(v, finished, 3));
        QCOMPARE(v.result()->bytes, 2 * 8 * MiB);
        QVERIFY(!v.compare(1, 99));
    }

    // Two files of the same loop, after 4 and after 9 iterations: only the kept graph's two stacks
    // changed, by 5 x 5 MiB and 5 x 3 MiB.
    void againstAnotherOpenFile() {
        jobtrace::Job a, b;
        a.graphKept = b.graphKept = {3 * MiB, 5 * MiB};
        a.iterations = 4;
        b.iterations = 9;
        SnapshotDocument docA(LoadedSnapshot::fromSnapshot(synth::read(jobtrace::pickle(a)), "four.pickle"));
        SnapshotDocument docB(LoadedSnapshot::fromSnapshot(synth::read(jobtrace::pickle(b)), "nine.pickle"));
        IterationDiffView v;
        QSignalSpy finished(&v, &IterationDiffView::finished);
        v.setDocument(&docA);
        QVERIFY(waitFinished(v, finished, 1));
        v.setOtherDocuments({&docA, &docB});
        QVERIFY(!v.compareWith(&docA));  // not against itself
        QVERIFY(v.compareWith(&docB));
        QVERIFY(waitFinished(v, finished, 2));
        QVERIFY(v.fileDiff());
        QCOMPARE(v.rowCount(), 2);
        const auto& d = *v.fileDiff();
        QCOMPARE(d[0].change, model::StackDelta::Change::Grew);
        QCOMPARE(d[0].delta(), static_cast<int64_t>(5 * 5 * MiB));
        QCOMPARE(d[1].delta(), static_cast<int64_t>(5 * 3 * MiB));
        v.selectRow(0);
        QVERIFY(docA.selectedStack() != 0);
    }

    void aTraceWithoutIterationsSaysSo() {
        jobtrace::Job job;
        job.iterations = 1;
        job.annotate = false;
        auto loaded = LoadedSnapshot::fromSnapshot(synth::read(jobtrace::pickle(job)), "one.pickle");
        SnapshotDocument doc(loaded);
        IterationDiffView v;
        QSignalSpy finished(&v, &IterationDiffView::finished);
        v.setDocument(&doc);
        QVERIFY(waitFinished(v, finished, 1));
        QVERIFY(v.iterations().iterations.empty());
        QVERIFY(v.statusText().contains(QStringLiteral("No iterations")));
        QVERIFY(!v.compare(1, 1));
    }
};

MEMLENS_GUI_TEST_MAIN(TestIterationDiffView)
#include "tst_iterationdiffview.moc"
