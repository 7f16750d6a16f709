// BlockMapView with documents: the totals line, the OOM verdict at an oom entry, clicking a
// block, the tooltip text, no document, and the real OOM fixture.
#include "DocumentFixture.h"
#include "QtTestMain.h"

#include "blockmap/BlockDescription.h"
#include "blockmap/BlockMapCanvas.h"
#include "blockmap/BlockMapView.h"
#include "common/ByteText.h"

#include <QTextDocument>
#include <QApplication>
#include <QSignalSpy>
#include <QtTest>

using namespace memlens::views;

// The middle of a layout rectangle, as QRect::center() gives it.
static QPoint centerOf(const PixelRect& r) {
    return QPoint(r.x() + (r.width() - 1) / 2, r.y() + (r.height() - 1) / 2);
}

class TestBlockMapView : public QObject {
    Q_OBJECT

    static QString plain(const QString& html) {
        QTextDocument d;
        d.setHtml(html);
        return d.toPlainText();
    }

private slots:
    void withoutADocument() {
        BlockMapView v;
        v.resize(800, 500);
        v.show();
        QVERIFY(v.isShowingPlaceholder());
        v.setDocument(nullptr);
        QVERIFY(v.isShowingPlaceholder());
        QVERIFY(v.verdictText().isEmpty());
    }

    void totalsAtTheLastEntry() {
        auto doc = viewtest::syntheticDocument();
        BlockMapView v;
        v.resize(900, 500);
        v.setDocument(doc.get());
        v.show();
        QVERIFY(QTest::qWaitForWindowExposed(&v));
        QVERIFY(!v.isShowingPlaceholder());
        // after entry 7: reserved 40 MiB, allocated 8 + 6 MiB, free 4 + 8 + 14 MiB, largest 14 MiB,
        // fragmentation 1 - 14/26 = 46 %
        const QString t = plain(v.totalsText());
        QVERIFY2(t.contains(QStringLiteral("after entry #7 (free_completed)")), qPrintable(t));
        QVERIFY2(t.contains(QStringLiteral("reserved 40 MiB")), qPrintable(t));
        QVERIFY(t.contains(QStringLiteral("allocated 14 MiB")));
        QVERIFY(t.contains(QStringLiteral("free 26 MiB")));
        QVERIFY(t.contains(QStringLiteral("largest free block 14 MiB")));
        QVERIFY(t.contains(QStringLiteral("fragmentation 46%")));
        QVERIFY(t.contains(QStringLiteral("2 segments")));
        QVERIFY(t.contains(QStringLiteral("OOM at #6")));  // a pointer to the oom entry
        QVERIFY(v.verdictText().isEmpty());
        // the map has both segments and outlines the largest free block (C's segment, block 1)
        const auto& layout = v.canvas()->layout();
        QCOMPARE(layout.segmentPieces().front().segment, 0u);
        QVERIFY(layout.largestFreeBlock().has_value());
        QCOMPARE(layout.largestFreeBlock()->first, 1u);
    }

    void verdictAtTheOomEntry() {
        auto doc = viewtest::syntheticDocument();
        BlockMapView v;
        v.resize(900, 500);
        v.setDocument(doc.get());
        doc->setCurrentEvent(6);
        // before it: A pending (4 MiB), B and C live; 8 + 14 MiB free in the cache, 30 MiB on the device
        const QString verdict = plain(v.verdictText());
        QVERIFY2(verdict.contains(QStringLiteral("Out of memory at entry #6")), qPrintable(verdict));
        QVERIFY2(verdict.contains(QStringLiteral(
                     "Out of memory: 64 MiB asked, only 22 MiB free in the allocator's cache and 30 MiB free on the device.")),
                 qPrintable(verdict));
        QVERIFY(plain(v.totalsText()).contains(QStringLiteral("pending free 4 MiB")));
        doc->setCurrentEvent(5);
        QVERIFY(v.verdictText().isEmpty());
    }

    void clickingABlockSelectsItsAllocation() {
        auto doc = viewtest::syntheticDocument();
        BlockMapView v;
        v.resize(900, 500);
        v.setDocument(doc.get());
        v.show();
        QVERIFY(QTest::qWaitForWindowExposed(&v));
        QSignalSpy selected(doc.get(), &SnapshotDocument::allocationSelected);
        // B: segment 0, block 1, allocated at entry 2
        const auto rects = v.canvas()->layout().rectsOf(0, 1);
        QVERIFY(!rects.empty());
        const QPoint at = centerOf(rects.front()->rect) + QPoint(2, 2);  // the canvas keeps a 2 px margin
        QTest::mouseClick(v.canvas(), Qt::LeftButton, {}, at);
        QCOMPARE(selected.count(), 1);
        QCOMPARE(doc->selectedDescription(), QStringLiteral("8 MiB block at 0x7f0000400000, allocated at entry #2"));
        QVERIFY(doc->selectedStack() != 0);
        QCOMPARE(doc->currentEvent(), int64_t(2));
        QVERIFY(plain(v.totalsText()).contains(QStringLiteral("after entry #2 (alloc)")));
        // clicking free space selects nothing
        const auto freeRects = v.canvas()->layout().rectsOf(1, 1);
        if (!freeRects.empty()) {
            doc->setCurrentEvent(7);
            const auto again = v.canvas()->layout().rectsOf(1, 1);
            QTest::mouseClick(v.canvas(), Qt::LeftButton, {}, centerOf(again.front()->rect) + QPoint(2, 2));
            QCOMPARE(selected.count(), 1);
            QCOMPARE(doc->currentEvent(), int64_t(7));
        }
    }

    void tooltipTellsTheBlockAndItsStack() {
        auto doc = viewtest::syntheticDocument();
        const auto& st = doc->currentState();
        BlockMapParams p;
        p.width = 500;
        BlockMapLayout layout(st, p);
        const auto rects = layout.rectsOf(0, 1);
        QVERIFY(!rects.empty());
        const QString tip = plain(blockTooltip(&doc->snapshot(), st.segments[0], *rects.front()));
        QVERIFY2(tip.contains(QStringLiteral("8 MiB allocated block at 0x7f0000400000")), qPrintable(tip));
        // thin spaces group the digits (the rich-text round trip may turn them into plain spaces)
        QString spaced = tip;
        spaced.replace(QChar(0x2009), QLatin1Char(' '));
        QVERIFY2(spaced.contains(QStringLiteral("requested 8 387 608 B, rounding 1 000 B")), qPrintable(tip));
        QVERIFY(tip.contains(QStringLiteral("allocated at entry #2")));
        QVERIFY(tip.contains(QStringLiteral("\u2026 1 C++ frame")) || tip.contains(QStringLiteral("malloc")));
        QVERIFY(tip.contains(QStringLiteral("attention model.py:57")));
        QVERIFY(tip.contains(QStringLiteral("train_step train.py:88")));
        // a free block has no stack
        const QString freeTip = plain(blockTooltip(&doc->snapshot(), st.segments[0], *layout.rectsOf(0, 0).front()));
        QVERIFY(freeTip.contains(QStringLiteral("free block")));
        QVERIFY(!freeTip.contains(QStringLiteral("train_step")));
    }

    void zoomingAndFitting() {
        auto doc = viewtest::syntheticDocument();
        BlockMapView v;
        v.resize(900, 500);
        v.setDocument(doc.get());
        v.show();
        QVERIFY(QTest::qWaitForWindowExposed(&v));
        const double fit = v.canvas()->layout().bytesPerPixel();
        v.canvas()->setZoom(4);
        QCOMPARE(v.canvas()->layout().bytesPerPixel(), fit / 4);
        v.canvas()->setZoom(1);
        QCOMPARE(v.canvas()->layout().bytesPerPixel(), fit);
    }

    // A window opening resizes the map several times before its first paint (restoring its docks):
    // the map is laid out once, at the last size, when the events queued meanwhile are done, and
    // at once where its layout is asked for.
    void aLayoutForSeveralResizes() {
        auto doc = viewtest::syntheticDocument();
        QWidget host;
        host.resize(900, 400);
        auto* canvas = new BlockMapCanvas(&host);  // no layout manager: only these resizes
        canvas->setGeometry(0, 0, 800, 300);
        host.show();
        QVERIFY(QTest::qWaitForWindowExposed(&host));
        canvas->setState(doc->currentStateShared(), doc->loaded().snapshot);
        QSignalSpy laidOut(canvas, &BlockMapCanvas::layoutChanged);
        for (int w : {700, 520, 610, 640}) canvas->resize(w, canvas->height());
        QCOMPARE(laidOut.count(), 0);
        QVERIFY(laidOut.wait());
        QCoreApplication::processEvents();
        QCOMPARE(laidOut.count(), 1);
        QCOMPARE(canvas->layout().width(), 640 - 4);  // a 2 px margin on either side
        QVERIFY(!canvas->layout().rects().empty());
        canvas->resize(500, canvas->height());
        QCOMPARE(canvas->layout().width(), 500 - 4);
        QCOMPARE(laidOut.count(), 2);
        QCoreApplication::processEvents();  // the queued layout finds nothing left to do
        QCOMPARE(laidOut.count(), 2);
    }

    void documentGoesAway() {
        auto doc = viewtest::syntheticDocument();
        BlockMapView v;
        v.setDocument(doc.get());
        doc.reset();
        QVERIFY(v.isShowingPlaceholder());
    }

    void realOomFixture() {
        auto doc = viewtest::fixtureDocument();
        if (!doc) QSKIP("no real snapshots");
        const auto oom = viewtest::fixtureOom();  // device, entry and figures from Python's pickle
        QVERIFY2(oom, "the oracle found no oom entry in the fixture");
        BlockMapView v;
        v.resize(1000, 600);
        v.setDocument(doc.get());
        v.show();
        QVERIFY(QTest::qWaitForWindowExposed(&v));
        doc->setDevice(oom->device);
        doc->setCurrentEvent(oom->index);
        const QString verdict = plain(v.verdictText());
        QVERIFY2(verdict.contains(QStringLiteral("Out of memory: %1 asked").arg(formatBytes(double(oom->size)))), qPrintable(verdict));
        const QString totals = plain(v.totalsText());
        QVERIFY2(totals.contains(QStringLiteral("reserved ") + formatBytes(double(oom->reservedBytes))), qPrintable(totals));
        QVERIFY(v.canvas()->layout().rects().size() > 50);
        QVERIFY(v.canvas()->layout().height() <= v.canvas()->height());
        // every device of the file shows
        for (int d : doc->devices()) {
            doc->setDevice(d);
            QVERIFY(!plain(v.totalsText()).isEmpty() || v.isShowingPlaceholder());
        }
    }

    // Grouping by pool moves private pools' segments after the default pool's, keeps address order
    // within each pool, and shares a state that is grouped already instead of copying it.
    void groupingByPoolCopiesOnlyWhereSegmentsMove() {
        using memlens::model::PoolId;
        auto state = std::make_shared<memlens::model::DeviceState>();
        const std::pair<uint64_t, PoolId> segs[] = {
            {0x1000, PoolId{}}, {0x2000, PoolId{1, 0}}, {0x3000, PoolId{0, 1}}, {0x4000, PoolId{}}, {0x5000, PoolId{0, 1}}};
        for (const auto& [address, pool] : segs) {
            memlens::model::StateSegment seg;
            seg.address = address;
            seg.pool = pool;
            state->segments.push_back(seg);
        }
        const auto grouped = BlockMapView::groupedByPool(state);
        QVERIFY(grouped != state);
        std::vector<uint64_t> order;
        for (const auto& seg : grouped->segments) order.push_back(seg.address);
        QCOMPARE(order, (std::vector<uint64_t>{0x1000, 0x4000, 0x3000, 0x5000, 0x2000}));
        QCOMPARE(state->segments[1].address, uint64_t(0x2000));  // the input is left as it was
        QCOMPARE(BlockMapView::groupedByPool(grouped), grouped);  // grouped already: the same state
    }

    // segments grouped by pool: the default pool first, then each private pool; each pool in the totals
    void privatePoolsGrouped() {
        auto doc = viewtest::newerDocument();
        BlockMapView v;
        v.resize(900, 500);
        v.setDocument(doc.get());
        v.show();
        QVERIFY(QTest::qWaitForWindowExposed(&v));
        const memlens::model::DeviceState* st = v.canvas()->state();
        QVERIFY(st);
        QCOMPARE(st->segments.size(), size_t(3));
        QCOMPARE(st->segments[0].address, newer::kA);
        QCOMPARE(st->segments[1].pool, (memlens::model::PoolId{0, 1}));
        QCOMPARE(st->segments[2].pool, (memlens::model::PoolId{1, 0}));
        const QString t = plain(v.totalsText());
        QVERIFY2(t.contains(QStringLiteral("private pool (0, 1): reserved 20 MiB, allocated 20 MiB")), qPrintable(t));
        QVERIFY(t.contains(QStringLiteral("private pool (1, 0): reserved 2 MiB, allocated 512 KiB")));
        doc->setDevice(memlens::model::kHostDevice);
        QVERIFY2(plain(v.totalsText()).startsWith(QStringLiteral("Pinned host memory")), qPrintable(plain(v.totalsText())));
    }

};

MEMLENS_GUI_TEST_MAIN(TestBlockMapView)
#include "tst_blockmapview.moc"
