// BlockMapLayout without a window: segments wrapped into rows, bytes scaled to pixels, blocks
// below a pixel merged one column at a time, and points mapped back to blocks. Expected values
// are worked out by hand in the comments.
#include "QtTestMain.h"
#include "StateFixture.h"

#include "core/BlockMapLayout.h"

#include <QtTest>

#include <cmath>
#include <random>

using namespace memlens::views;
using namespace viewtest;
using K = StateBlockKind;

class TestBlockMapLayout : public QObject {
    Q_OBJECT

    static BlockMapParams params(int width, double bpp) {
        BlockMapParams p;
        p.width = width;
        p.rowHeight = 10;
        p.rowGap = 5;
        p.segmentGap = 3;
        p.bytesPerPixel = bpp;
        return p;
    }

    // "x,y,w kind count" for each rect
    static QStringList describe(const BlockMapLayout& l) {
        QStringList out;
        for (const auto& r : l.rects())
            out << QStringLiteral("%1,%2,%3 %4 %5")
                       .arg(r.rect.x())
                       .arg(r.rect.y())
                       .arg(r.rect.width())
                       .arg(QString::fromLatin1(memlens::model::stateBlockKindName(r.kind)))
                       .arg(r.blockCount);
        return out;
    }

private slots:
    void wrapsSegmentsIntoRows() {
        // bpp 10: A = 1000 B -> 100 px, B = 500 B -> 50 px, C = 2500 B -> 250 px; rows of 200 px.
        // A at [0,100); gap 3; B at [103,153); gap 3; C (wider than a row) starts at 156 and wraps:
        // 44 px on row 0, 200 on row 1, 6 on row 2. Rows are 10 px high with 5 px between.
        DeviceState st = stateOf({segmentOf(0x1000, {{1000, K::Allocated}}), segmentOf(0x10000, {{500, K::Free}}),
                                  segmentOf(0x20000, {{2500, K::Allocated}})});
        BlockMapLayout l(st, params(200, 10));
        QCOMPARE(l.bytesPerPixel(), 10.0);
        QCOMPARE(l.rows(), 3);
        QCOMPARE(l.height(), 3 * 10 + 2 * 5);
        QCOMPARE(l.segmentPixels(0), 100);
        QCOMPARE(l.segmentPixels(2), 250);
        const auto& pieces = l.segmentPieces();
        QCOMPARE(pieces.size(), size_t(5));
        QCOMPARE(pieces[0].rect, PixelRect(0, 0, 100, 10));
        QCOMPARE(pieces[1].rect, PixelRect(103, 0, 50, 10));
        QCOMPARE(pieces[2].rect, PixelRect(156, 0, 44, 10));
        QVERIFY(pieces[2].first && !pieces[2].last);
        QCOMPARE(pieces[3].rect, PixelRect(0, 15, 200, 10));
        QVERIFY(!pieces[3].first && !pieces[3].last);
        QCOMPARE(pieces[4].rect, PixelRect(0, 30, 6, 10));
        QVERIFY(pieces[4].last);
        QCOMPARE(describe(l), (QStringList{"0,0,100 active_allocated 1", "103,0,50 inactive 1",
                                           "156,0,44 active_allocated 1", "0,15,200 active_allocated 1",
                                           "0,30,6 active_allocated 1"}));
    }

    void aSegmentThatFitsARowDoesNotSplit() {
        // A = 150 px, then B = 100 px: 153 + 100 > 200, and B fits on a row, so it starts row 1
        DeviceState st = stateOf({segmentOf(0x1000, {{1500, K::Allocated}}), segmentOf(0x10000, {{1000, K::Free}})});
        BlockMapLayout l(st, params(200, 10));
        QCOMPARE(l.segmentPieces().size(), size_t(2));
        QCOMPARE(l.segmentPieces()[1].rect, PixelRect(0, 15, 100, 10));
        QCOMPARE(l.rows(), 2);
    }

    void scalesBlocksInsideASegment() {
        // 1000 B at bpp 10 = 100 px: 300 B -> [0,30), 200 B -> [30,50), 500 B -> [50,100)
        DeviceState st = stateOf({segmentOf(0x1000, {{300, K::Allocated}, {200, K::Free}, {500, K::PendingFree}})});
        BlockMapLayout l(st, params(400, 10));
        QCOMPARE(describe(l), (QStringList{"0,0,30 active_allocated 1", "30,0,20 inactive 1", "50,0,50 active_pending_free 1"}));
        // bpp 4: 250 px; 300 B -> 75 px, 200 B -> 50 px, 500 B -> 125 px
        BlockMapLayout l4(st, params(400, 4));
        QCOMPARE(describe(l4), (QStringList{"0,0,75 active_allocated 1", "75,0,50 inactive 1", "125,0,125 active_pending_free 1"}));
    }

    void mergesBlocksBelowAPixelColumnByColumn() {
        // 1000 B at bpp 10. 500 B allocated -> [0,50). Then ten 3-byte blocks (0.3 px each) from
        // x = 50 to 53: 4 free then 6 allocated. Their middles are at 50.15 + 0.3 k:
        // k = 0..2 in column 50 (free, free, free), k = 3..6 in column 51 (free + 3 allocated:
        // 9 B allocated against 3 B free), k = 7..9 in column 52 (allocated). 470 B free -> [53,100).
        std::vector<std::pair<uint64_t, K>> blocks = {{500, K::Allocated}};
        for (int k = 0; k < 10; ++k) blocks.push_back({3, k < 4 ? K::Free : K::Allocated});
        blocks.push_back({470, K::Free});
        DeviceState st = stateOf({segmentOf(0x1000, blocks)});
        BlockMapLayout l(st, params(400, 10));
        QCOMPARE(describe(l), (QStringList{"0,0,50 active_allocated 1", "50,0,1 inactive 3", "51,0,1 active_allocated 4",
                                           "52,0,1 active_allocated 3", "53,0,47 inactive 1"}));
        const auto& col51 = l.rects()[2];
        QVERIFY(col51.merged());
        QCOMPARE(col51.firstBlock, 4u);
        QCOMPARE(col51.kind, K::Allocated);
        QVERIFY(col51.block >= 5 && col51.block <= 7);  // one of its allocated blocks stands for it
        // every pixel column of the segment is drawn exactly once
        int covered = 0;
        for (const auto& r : l.rects()) covered += r.rect.width();
        QCOMPARE(covered, 100);
    }

    void aRunBelowOnePixelTakesAColumnFromItsNeighbour() {
        // 10000 B at bpp 10 = 1000 px. 5000 B -> [0,500). Two 2-byte blocks (allocated, free) span
        // [500, 500.4): no column of their own, so they take column 500 from the 4996-byte free block
        // after them ([500.4,1000) -> [500,1000) -> [501,1000)). Tied bytes: allocated wins.
        DeviceState st = stateOf({segmentOf(0x1000, {{5000, K::Free}, {2, K::Allocated}, {2, K::Free}, {4996, K::Free}})});
        BlockMapLayout l(st, params(2000, 10));
        QCOMPARE(describe(l), (QStringList{"0,0,500 inactive 1", "500,0,1 active_allocated 2", "501,0,499 inactive 1"}));
        // at the end of a segment the run takes the last column of the block before it
        DeviceState end = stateOf({segmentOf(0x1000, {{9996, K::Free}, {4, K::Allocated}})});
        BlockMapLayout le(end, params(2000, 10));
        QCOMPARE(describe(le), (QStringList{"0,0,999 inactive 1", "999,0,1 active_allocated 1"}));
        // a one-column neighbour cannot give a column: the run joins it
        DeviceState tight = stateOf({segmentOf(0x1000, {{10, K::Free}, {2, K::Allocated}, {8, K::Allocated}})});
        BlockMapLayout lt(tight, params(100, 10));  // 2 px: [0,1) free; the 2 B run rounds into column 1
        QCOMPARE(describe(lt), (QStringList{"0,0,1 inactive 1", "1,0,1 active_allocated 2"}));
        // a whole segment below a pixel is still one pixel
        DeviceState tiny = stateOf({segmentOf(0x1000, {{3, K::Allocated}, {1, K::Free}})});
        BlockMapLayout lz(tiny, params(100, 10));
        QCOMPARE(describe(lz), (QStringList{"0,0,1 active_allocated 2"}));
    }

    void blocksWrapWithTheirSegment() {
        // a 3000 B allocated block at bpp 10 = 300 px on rows of 200: two pieces, one block
        DeviceState st = stateOf({segmentOf(0x1000, {{1000, K::Free}, {3000, K::Allocated}})});
        BlockMapLayout l(st, params(200, 10));
        QCOMPARE(describe(l), (QStringList{"0,0,100 inactive 1", "100,0,100 active_allocated 1", "0,15,200 active_allocated 1"}));
        const auto pieces = l.rectsOf(0, 1);
        QCOMPARE(pieces.size(), size_t(2));
        QCOMPARE(pieces[0]->rect, PixelRect(100, 0, 100, 10));
        QCOMPARE(pieces[1]->rect, PixelRect(0, 15, 200, 10));
        QVERIFY(l.rectsOf(0, 5).empty());
        QVERIFY(l.rectsOf(3, 0).empty());
    }

    void hitTestsPointsBackToBlocks() {
        // segment 0: [0,30) A, [30,50) free, [50,100) pending; segment 1 (250 px, wider than a row)
        // starts at 103 and wraps: 97 px on row 0, 153 px on row 1
        DeviceState st = stateOf({segmentOf(0x1000, {{300, K::Allocated}, {200, K::Free}, {500, K::PendingFree}}),
                                  segmentOf(0x9000, {{2500, K::Allocated}})});
        BlockMapLayout l(st, params(200, 10));
        auto at = [&](int x, int y) -> QString {
            const BlockMapRect* r = l.rectAt(PixelPoint{x, y});
            return r ? QStringLiteral("%1/%2").arg(r->segment).arg(r->block) : QStringLiteral("-");
        };
        QCOMPARE(at(0, 0), QStringLiteral("0/0"));
        QCOMPARE(at(29, 9), QStringLiteral("0/0"));
        QCOMPARE(at(30, 5), QStringLiteral("0/1"));
        QCOMPARE(at(99, 5), QStringLiteral("0/2"));
        QCOMPARE(at(100, 5), QStringLiteral("-"));  // the gap between segments
        QCOMPARE(at(102, 5), QStringLiteral("-"));
        QCOMPARE(at(103, 5), QStringLiteral("1/0"));
        QCOMPARE(at(199, 0), QStringLiteral("1/0"));
        QCOMPARE(at(5, 12), QStringLiteral("-"));   // the gap between rows
        QCOMPARE(at(2, 15), QStringLiteral("1/0")); // the wrapped piece
        QCOMPARE(at(152, 24), QStringLiteral("1/0"));
        QCOMPARE(at(153, 15), QStringLiteral("-"));  // past the end
        QCOMPARE(at(-1, 0), QStringLiteral("-"));
        QCOMPARE(at(200, 0), QStringLiteral("-"));
        QCOMPARE(at(0, 40), QStringLiteral("-"));
        // every rect's own pixels hit it
        for (const auto& r : l.rects()) {
            QCOMPARE(l.rectAt(r.rect.topLeft()), &r);
            QCOMPARE(l.rectAt(r.rect.bottomRight()), &r);
        }
    }

    void findsTheLargestFreeBlock() {
        DeviceState st = stateOf({segmentOf(0x1000, {{300, K::Free}, {200, K::Allocated}}),
                                  segmentOf(0x9000, {{100, K::Allocated}, {700, K::Free}, {700, K::Free}})});
        BlockMapLayout l(st, params(200, 10));
        QVERIFY(l.largestFreeBlock().has_value());
        QCOMPARE(l.largestFreeBlock()->first, 1u);
        QCOMPARE(l.largestFreeBlock()->second, 1u);  // the first of two equal ones
        BlockMapLayout none(stateOf({segmentOf(0x1000, {{300, K::Allocated}})}), params(200, 10));
        QVERIFY(!none.largestFreeBlock().has_value());
    }

    void fitsTheHeightItIsGiven() {
        // 23 segments of mixed sizes fit in 200 px of rows of 10 + 5
        std::vector<StateSegment> segs;
        for (int i = 0; i < 23; ++i)
            segs.push_back(segmentOf(0x100000ull * (i + 1), {{(i % 5 + 1) * 20 * MiB, K::Allocated}, {2 * MiB, K::Free}}));
        DeviceState st = stateOf(segs);
        BlockMapParams p = params(300, 0);
        p.fitHeight = 200;
        BlockMapLayout l(st, p);
        QVERIFY(l.height() <= 200);
        QVERIFY(l.rows() >= 10);  // and uses most of it: 13 rows fit
        // the scale found is about as small as it can be: 10% smaller no longer fits
        BlockMapParams q = p;
        q.bytesPerPixel = l.bytesPerPixel() * 0.9;
        QVERIFY(BlockMapLayout(st, q).height() > 200);
        // an empty state has no rows
        BlockMapLayout empty(DeviceState{}, p);
        QCOMPARE(empty.rows(), 0);
        QCOMPARE(empty.height(), 0);
        QVERIFY(empty.rectAt(PixelPoint{0, 0}) == nullptr);
    }

    void theFitIsTheSmallestScaleThatFits() {
        // Random states, from a few large segments to thousands of small ones. The scale found
        // fits the height, and 5 % less no longer does, unless 5 % less could not fit whatever the
        // layout (the bytes alone need more pixels than the rows hold) or is below the floor.
        std::mt19937_64 rng(20261202);
        for (int round = 0; round < 40; ++round) {
            const int segments = std::uniform_int_distribution<int>(1, round < 30 ? 200 : 3000)(rng);
            std::vector<StateSegment> segs;
            uint64_t address = 0x100000, total = 0;
            for (int i = 0; i < segments; ++i) {
                const uint64_t size = std::uniform_int_distribution<uint64_t>(1, 64)(rng) * 2 * MiB;
                segs.push_back(segmentOf(address, {{size / 2, K::Allocated}, {size / 2, K::Free}}));
                address += size + 0x100000;
                total += size;
            }
            const DeviceState st = stateOf(segs);
            BlockMapParams p = params(std::uniform_int_distribution<int>(50, 800)(rng), 0);
            p.fitHeight = std::uniform_int_distribution<int>(15, 600)(rng);
            const int rowsAvailable = (p.fitHeight + p.rowGap) / (p.rowHeight + p.rowGap);
            const double bpp = BlockMapLayout::fitBytesPerPixel(st, p);
            QVERIFY(std::isfinite(bpp) && bpp > 0);
            BlockMapParams at = p;
            at.bytesPerPixel = bpp;
            // each segment takes a pixel and a gap at least (and a row may end in a gap): near
            // that, nothing may fit
            const bool canFit =
                int64_t(segments) * (1 + p.segmentGap) <= int64_t(rowsAvailable) * (p.width - 2 * p.segmentGap - 2);
            if (!canFit) continue;
            QVERIFY2(BlockMapLayout(st, at).height() <= p.fitHeight, qPrintable(QStringLiteral("round %1").arg(round)));
            const double smaller = bpp / 1.05;
            const bool hopeless = smaller * rowsAvailable * p.width < double(total) || smaller < 1.0 / 64;
            at.bytesPerPixel = smaller;
            QVERIFY2(hopeless || BlockMapLayout(st, at).height() > p.fitHeight, qPrintable(QStringLiteral("round %1").arg(round)));
        }
    }
};

MEMLENS_CORE_TEST_MAIN(TestBlockMapLayout)
#include "tst_blockmaplayout.moc"
