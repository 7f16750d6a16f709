// TimelineBands: per column, the "other" band at the bottom and the chosen live allocations above
// it in allocation order, reaching live bytes; hit-testing by height. Checked against the
// definition computed directly from the lifetimes.
#include "QtTestMain.h"
#include "TraceFixture.h"

#include "core/TimelineBands.h"
#include "core/TimelineLayout.h"

#include <QtTest>

using namespace memlens::views;
using namespace tracetest;

class TestTimelineBands : public QObject {
    Q_OBJECT

private slots:
    void stacksAtEachEntry() {
        const auto loaded = load(smallTrace());
        const AllocationLifetimes& l = *loaded->lifetimes.at(0);
        const auto& live = loaded->timelines.at(0)->liveBytes;
        const std::vector<uint32_t> chosen = l.largest(3);  // A (1), B (2), D (4)
        QCOMPARE(chosen, (std::vector<uint32_t>{1, 2, 4}));
        std::vector<int64_t> entries, lives;
        for (int64_t e = 0; e < static_cast<int64_t>(live.size()); ++e) {
            entries.push_back(e);
            lives.push_back(live[static_cast<size_t>(e)]);
        }
        const TimelineBands bands(l, chosen, entries, lives);
        for (int c = 0; c < bands.width(); ++c) {
            const int64_t e = entries[static_cast<size_t>(c)];
            std::vector<uint32_t> expect;
            int64_t sum = 0;
            for (uint32_t id : chosen)
                if (l[id].liveAt(e)) {
                    expect.push_back(id);
                    sum += static_cast<int64_t>(l.bytes(id));
                }
            const auto got = bands.lifetimes(c);
            QCOMPARE(std::vector<uint32_t>(got.begin(), got.end()), expect);
            QCOMPARE(bands.other(c), std::max<int64_t>(0, lives[static_cast<size_t>(c)] - sum));
            const auto segs = bands.segments(c);
            if (!segs.empty()) {
                QCOMPARE(segs.front().bottom, bands.other(c));
                QCOMPARE(segs.back().top, bands.other(c) + sum);
            }
        }
        // entry 3: A, B, C and E live; chosen A and B on top of other = C + E
        QCOMPARE(bands.other(3), static_cast<int64_t>(256 * KiB + 128 * KiB));
        QCOMPARE(bands.hit(3, 0), TimelineBands::kOther);
        QCOMPARE(bands.hit(3, static_cast<int64_t>(384 * KiB)), int64_t(1));
        QCOMPARE(bands.hit(3, static_cast<int64_t>(384 * KiB + 1 * MiB)), int64_t(2));
        QCOMPARE(bands.hit(3, static_cast<int64_t>(384 * KiB + 1 * MiB + 512 * KiB)), TimelineBands::kNothing);
        QCOMPARE(bands.hit(3, -5), TimelineBands::kNothing);
        QCOMPARE(bands.hit(99, 0), TimelineBands::kNothing);
    }

    void skippedColumns() {
        const auto loaded = load(smallTrace());
        const AllocationLifetimes& l = *loaded->lifetimes.at(0);
        const std::vector<uint32_t> chosen = l.largest(5);
        const std::vector<int64_t> entries = {TimelineBands::kNoEntry, 2, TimelineBands::kNoEntry, 7};
        const std::vector<int64_t> lives = {0, 1, 0, 1};
        const TimelineBands bands(l, chosen, entries, lives);
        QCOMPARE(bands.lifetimes(0).size(), size_t(0));
        QCOMPARE(bands.hit(0, 0), TimelineBands::kNothing);
        QCOMPARE(bands.lifetimes(1).size(), size_t(3));  // E, A, B
        QCOMPARE(bands.lifetimes(3).size(), size_t(4));  // E, A, C, D
        QCOMPARE(bands.other(3), int64_t(0));            // clamped, never negative
    }

    void layoutDrawsEachColumnAtItsPeak() {
        const auto loaded = load(smallTrace());
        const EntryAxis axis = EntryAxis::byIndex(12);
        const auto chosen = loaded->lifetimes.at(0)->largest(2);
        const TimelineLayout layout = TimelineLayout::compute(axis, *loaded->timelines.at(0), *loaded->lifetimes.at(0),
                                                              chosen, 0, 12, 3);
        QCOMPARE(layout.width(), 3);
        const auto& live = loaded->timelines.at(0)->liveBytes;
        int64_t peak = 0;
        for (int c = 0; c < 3; ++c) {
            const int64_t e = layout.bands().entry(c);
            QCOMPARE(live[static_cast<size_t>(e)], layout.live()[static_cast<size_t>(c)].max);
            peak = std::max({peak, layout.live()[static_cast<size_t>(c)].max, layout.reserved()[static_cast<size_t>(c)].max});
        }
        QCOMPARE(layout.maxBytes(), peak);
        QCOMPARE(layout.maxBytes(), static_cast<int64_t>(kSegment));  // reserved dominates
    }
};

MEMLENS_CORE_TEST_MAIN(TestTimelineBands)
#include "tst_timelinebands.moc"
