// BreakdownView with documents: the parts at several entries (worked out by hand for the
// synthetic snapshot), the note about what a snapshot cannot see, process figures that take the
// bar to nvidia-smi's number, no document, and a real fixture.
#include "DocumentFixture.h"
#include "QtTestMain.h"
#include "JobTrace.h"

#include "breakdown/AllocatorSettingsPanel.h"
#include "breakdown/BreakdownBar.h"
#include "breakdown/BreakdownView.h"
#include "common/ByteText.h"

#include <QTextDocument>
#include <QApplication>
#include <QtTest>

using namespace memlens::views;
using namespace memlens::model;
using viewtest::MiB;

class TestBreakdownView : public QObject {
    Q_OBJECT

    static QString plain(const QString& html) {
        QTextDocument d;
        d.setHtml(html);
        return d.toPlainText();
    }
    static uint64_t sum(const MemoryBreakdown& b) {
        uint64_t s = 0;
        for (const auto& p : b.parts) s += p.bytes;
        return s;
    }

private slots:
    void withoutADocument() {
        BreakdownView v;
        v.show();
        QVERIFY(v.isShowingPlaceholder());
    }

    void partsAtTheLastEntry() {
        auto doc = viewtest::syntheticDocument();
        BreakdownView v;
        v.resize(900, 500);
        v.setDocument(doc.get());
        v.show();
        QVERIFY(!v.isShowingPlaceholder());
        // after entry 7: live B (8 MiB - 1000 B) and C (6 MiB); B's rounding 1000 B; free in used
        // segments 4 + 8 MiB in the first and 14 MiB in the expandable one (no whole 20 MiB page)
        const auto& b = v.breakdown();
        QCOMPARE(b.bytes(BreakdownPart::LiveTensors), 14 * MiB - 1000);
        QCOMPARE(b.bytes(BreakdownPart::Rounding), 1000u);
        QCOMPARE(b.bytes(BreakdownPart::PendingFree), 0u);
        QCOMPARE(b.bytes(BreakdownPart::FragmentedFree), 26 * MiB);
        QCOMPARE(b.bytes(BreakdownPart::ReleasableFree), 0u);
        QCOMPARE(sum(b), 40 * MiB);
        const QString head = plain(v.headlineText());
        QVERIFY2(head.contains(QStringLiteral("Why nvidia-smi shows more")), qPrintable(head));
        QVERIFY(head.contains(QStringLiteral("device 0, after entry #7")));
        QVERIFY(head.contains(QStringLiteral("reserved 40 MiB from the driver; live tensors use 14 MiB of it (35%)")));
        const QStringList rows = v.rowTexts();
        QCOMPARE(rows.size(), 5);
        QVERIFY(rows[0].startsWith(QStringLiteral("Live tensors|14 MiB|")));
        QVERIFY(rows[1].startsWith(QStringLiteral("Rounding|1000 B|")));
        QVERIFY(rows[3].startsWith(QStringLiteral("Free in used segments|26 MiB|")));
        QVERIFY(rows[3].contains(QStringLiteral("empty_cache() cannot return them")));
        const QString note = plain(v.noteText());
        QVERIFY(note.contains(QStringLiteral("CUDA context (typically 300\u2013600 MiB")));
        QVERIFY(note.contains(QStringLiteral("captured session")));
        // the bar: five parts and the hatched tail; live tensors are most of it
        auto* bar = v.findChild<BreakdownBar*>();
        QVERIFY(bar);
        const auto rects = bar->partRects();
        QCOMPARE(rects.size(), size_t(6));
        QVERIFY(rects[0].width() > rects[3].width() / 2);
        QCOMPARE(rects[2].width(), 0);  // no pending frees
        QCOMPARE(bar->partAt(rects[0].center()), 0);
        QCOMPARE(bar->partAt(rects[5].center()), -1);  // the tail is not a part
    }

    void followsTheCurrentEntry() {
        auto doc = viewtest::syntheticDocument();
        BreakdownView v;
        v.setDocument(doc.get());
        doc->setCurrentEvent(5);  // A freed by the program, not yet returned: pending
        QCOMPARE(v.breakdown().bytes(BreakdownPart::PendingFree), 4 * MiB);
        QCOMPARE(sum(v.breakdown()), 40 * MiB);
        doc->setCurrentEvent(0);  // one empty 20 MiB segment: empty_cache would return it all
        QCOMPARE(v.breakdown().bytes(BreakdownPart::ReleasableFree), 20 * MiB);
        QCOMPARE(v.breakdown().bytes(BreakdownPart::LiveTensors), 0u);
        doc->setCurrentEvent(-1);
        QVERIFY(plain(v.headlineText()).contains(QStringLiteral("holds no memory")));
    }

    void processFiguresReachNvidiaSmi() {
        auto doc = viewtest::syntheticDocument();
        BreakdownView v;
        v.resize(900, 500);
        v.setDocument(doc.get());
        ProcessFigures pf;
        pf.processTotal = 40 * MiB + 500 * MiB;
        pf.cudaContext = 420 * MiB;
        v.setProcessFigures(pf);
        const auto& b = v.breakdown();
        QVERIFY(b.hasProcessFigures);
        QCOMPARE(b.totalBytes, 540 * MiB);
        QCOMPARE(b.bytes(BreakdownPart::CudaContext), 420 * MiB);
        QCOMPARE(b.bytes(BreakdownPart::OutsidePyTorch), 80 * MiB);
        QCOMPARE(v.rowTexts().size(), 7);
        QVERIFY(v.noteText().isEmpty());
        QVERIFY(plain(v.headlineText()).contains(QStringLiteral("The process holds 540 MiB in all.")));
        QCOMPARE(v.findChild<BreakdownBar*>()->partRects().size(), size_t(7));  // no tail
        v.setProcessFigures(std::nullopt);
        QCOMPARE(v.rowTexts().size(), 5);
        QVERIFY(!v.noteText().isEmpty());
    }

    // A training loop written as a trace (tests/support/JobTrace.h) cut off inside one more
    // forward pass: live at the end are its 3 parameters (1 MiB each, made under Module._apply),
    // the optimizer's state (6 x 1 MiB, under torch/optim) and the cut iteration's input batch
    // (2 MiB, train.py) and 4 activations (4 MiB each, under forward).
    void liveTensorsByCategory() {
        jobtrace::Job job;
        job.cutLast = true;
        auto loaded = LoadedSnapshot::fromSnapshot(synth::read(jobtrace::pickle(job)), "loop.pickle");
        SnapshotDocument doc(loaded);
        BreakdownView v;
        v.setDocument(&doc);
        doc.setCurrentEvent(doc.entryCount() - 1);
        const QString text = plain(v.categoryText());
        QVERIFY2(text.contains(QStringLiteral("Parameters 3 MiB")), qPrintable(text));
        QVERIFY2(text.contains(QStringLiteral("Optimizer state 6 MiB")), qPrintable(text));
        QVERIFY2(text.contains(QStringLiteral("Saved for backward 16 MiB")), qPrintable(text));
        QVERIFY2(text.contains(QStringLiteral("Other 2 MiB")), qPrintable(text));
        QVERIFY2(!text.contains(QStringLiteral("Gradients")), qPrintable(text));
    }

    void realFixture() {
        auto doc = viewtest::fixtureDocument();
        if (!doc) QSKIP("no real snapshots");
        BreakdownView v;
        v.resize(900, 500);
        v.setDocument(doc.get());
        v.show();
        for (int d : doc->devices()) {
            doc->setDevice(d);
            QCOMPARE(sum(v.breakdown()), doc->currentState().reservedBytes);
        }
        const auto oom = viewtest::fixtureOom();  // device, entry and reserved bytes from Python's pickle
        QVERIFY2(oom, "the oracle found no oom entry in the fixture");
        doc->setDevice(oom->device);
        doc->setCurrentEvent(oom->index);
        QCOMPARE(doc->currentState().reservedBytes, oom->reservedBytes);
        const QString headline = plain(v.headlineText());
        QVERIFY2(headline.contains(QStringLiteral("reserved ") + formatBytes(double(oom->reservedBytes))), qPrintable(headline));
    }

    // private pools apart (inside the parts), and the allocator settings as a table
    void privatePoolsAndSettings() {
        auto doc = viewtest::newerDocument();
        BreakdownView v;
        v.resize(900, 700);
        v.setDocument(doc.get());
        v.show();
        const QString pools = plain(v.poolsText());
        QVERIFY2(pools.contains(QStringLiteral("private pool (0, 1): reserved 20 MiB, live 20 MiB, cached free 0 B")), qPrintable(pools));
        QVERIFY(pools.contains(QStringLiteral("private pool (1, 0): reserved 2 MiB, live 512 KiB, cached free 1.5 MiB")));
        const QStringList rows = v.settingsPanel()->rowTexts();
        QVERIFY2(rows.contains(QStringLiteral("max_split_size = 67108864")), qPrintable(rows.join('\n')));
        QVERIFY(rows.contains(QStringLiteral("trace_alloc_overflowed = True")));
        QVERIFY(rows.contains(QStringLiteral("trace_alloc_max_entries = 9")));
        QVERIFY(v.settingsPanel()->isVisibleTo(&v));
        // no private pool on the synthetic snapshot: no line
        auto plainDoc = viewtest::syntheticDocument();
        v.setDocument(plainDoc.get());
        QVERIFY(v.poolsText().isEmpty());
    }

};

MEMLENS_GUI_TEST_MAIN(TestBreakdownView)
#include "tst_breakdownview.moc"
