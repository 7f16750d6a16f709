// StackAggregates and the stack groups of TimelineBands: the allocations not drawn one by one,
// summed by the stack that made them. Each group's bytes are checked against the sum worked out
// directly from the lifetimes at every entry; the choice of stacks against their areas.
#include "QtTestMain.h"
#include "TraceFixture.h"

#include "core/StackAggregates.h"
#include "core/TimelineBands.h"

#include <QtTest>

using namespace memlens::views;
using namespace tracetest;

namespace {

StackAggregates::Options opts(size_t maxGroups, double minShare, double minOtherShare = 0.25, size_t samples = 4096,
                              size_t minAllocations = 1) {
    StackAggregates::Options o;
    o.maxGroups = maxGroups;
    o.minShare = minShare;
    o.minOtherShare = minOtherShare;
    o.samples = samples;
    o.minAllocations = minAllocations;
    return o;
}

constexpr uint64_t slot64(int k) { return kBase + static_cast<uint64_t>(k) * 64 * KiB; }

// 40 long-lived 64 KiB allocations from "embed"; then 100 short 32 KiB ones from "attn", each
// freed by the next entry; then one 1 MiB from "big", freed at once.
std::vector<Entry> manySmall() {
    std::vector<Entry> t;
    for (int k = 0; k < 40; ++k) t.push_back({"alloc", slot64(k), 64 * KiB, -1, "embed"});
    for (int r = 0; r < 100; ++r) {
        t.push_back({"alloc", slot64(40 + r % 20), 32 * KiB, -1, "attn"});
        t.push_back({"free_completed", slot64(40 + r % 20), 32 * KiB, -1, "attn"});
    }
    t.push_back({"alloc", slot64(100), MiB, -1, "big"});
    t.push_back({"free_completed", slot64(100), MiB, -1, "big"});
    return t;
}

// Live bytes of STACK's lifetimes not in CHOSEN right after entry E, from the definition.
int64_t liveOf(const AllocationLifetimes& l, memlens::model::StackId stack, const std::vector<uint32_t>& chosen, int64_t e) {
    int64_t sum = 0;
    for (size_t i = 0; i < l.size(); ++i)
        if (l.stack(i) == stack && l[i].liveAt(e) && std::find(chosen.begin(), chosen.end(), i) == chosen.end())
            sum += static_cast<int64_t>(l.bytes(i));
    return sum;
}

} // namespace

class TestStackAggregates : public QObject {
    Q_OBJECT

private slots:
    void sumsEachStacksAllocations() {
        const auto loaded = load(manySmall());
        const AllocationLifetimes& l = *loaded->lifetimes.at(0);
        const int64_t n = static_cast<int64_t>(loaded->timelines.at(0)->liveBytes.size());
        QCOMPARE(n, int64_t(242));
        // a sample at every entry: each group's bytes are exact
        const auto all = StackAggregates::compute(l, {}, 0, n - 1, opts(8, 0.0, 0.25, static_cast<size_t>(n)));
        QCOMPARE(all.groupCount(), size_t(3));
        // by area (bytes x entries): embed 40 x 64 KiB x ~200 entries, attn 100 x 32 KiB x 1, big 1 MiB x 1
        const memlens::model::StackId embed = all.stack(0), attn = all.stack(1), big = all.stack(2);
        QVERIFY(embed != attn && attn != big && embed != big);
        QCOMPARE(all.allocationCount(0), size_t(40));
        QCOMPARE(all.allocationCount(1), size_t(100));
        QCOMPARE(all.allocationCount(2), size_t(1));
        for (int64_t e = 0; e < n; ++e)
            for (size_t g = 0; g < 3; ++g)
                QCOMPARE(all.bytesAt(g, e), liveOf(l, all.stack(g), {}, e));
        QCOMPARE(all.bytesAt(0, n), int64_t(0));  // outside the range
        QCOMPARE(all.bytesAt(0, -1), int64_t(0));

        // the default share of 2 %: only embed's area counts
        const auto main = StackAggregates::compute(l, {}, 0, n - 1);
        QCOMPARE(main.groupCount(), size_t(1));
        QCOMPARE(main.stack(0), embed);
        // a stack of one allocation is no crowd (by default, four at least)
        QCOMPARE(StackAggregates::compute(l, {}, 0, n - 1, opts(8, 0.0, 0.25, 4096, 4)).groupCount(), size_t(2));
        // at most two groups
        QCOMPARE(StackAggregates::compute(l, {}, 0, n - 1, opts(2, 0.0)).groupCount(), size_t(2));
        // when embed's allocations are drawn one by one, what is left is too small to group
        std::vector<uint32_t> embedIds;
        for (size_t i = 0; i < l.size(); ++i)
            if (l.stack(i) == embed) embedIds.push_back(static_cast<uint32_t>(i));
        QCOMPARE(StackAggregates::compute(l, embedIds, 0, n - 1, opts(8, 0.0)).groupCount(), size_t(0));
        // ... unless grouping is asked for whatever the share
        const auto rest = StackAggregates::compute(l, embedIds, 0, n - 1, opts(8, 0.0, 0.0, static_cast<size_t>(n)));
        QCOMPARE(rest.groupCount(), size_t(2));
        for (int64_t e = 0; e < n; ++e) QCOMPARE(rest.bytesAt(0, e), liveOf(l, rest.stack(0), embedIds, e));
    }

    void samplesReadTheEntryAtOrBefore() {
        const auto loaded = load(manySmall());
        const AllocationLifetimes& l = *loaded->lifetimes.at(0);
        const int64_t n = static_cast<int64_t>(loaded->timelines.at(0)->liveBytes.size());
        // 10 samples over 242 entries: each entry reads a value the group had at an entry no later
        // than it and less than a sample step (about 27 entries) earlier
        const auto g = StackAggregates::compute(l, {}, 0, n - 1, opts(1, 0.0, 0.25, 10));
        QCOMPARE(g.groupCount(), size_t(1));
        for (int64_t e = 0; e < n; ++e) {
            bool found = false;
            for (int64_t back = 0; back <= 27 && e - back >= 0 && !found; ++back)
                found = g.bytesAt(0, e) == liveOf(l, g.stack(0), {}, e - back);
            QVERIFY2(found, qPrintable(QStringLiteral("entry %1").arg(e)));
        }
        QCOMPARE(g.bytesAt(0, 0), liveOf(l, g.stack(0), {}, 0));  // the first sample is the first entry
        QCOMPARE(g.bytesAt(0, n - 1), liveOf(l, g.stack(0), {}, n - 1));  // and the last the last
    }

    void bandsHoldGroupsInsideOther() {
        const auto loaded = load(manySmall());
        const AllocationLifetimes& l = *loaded->lifetimes.at(0);
        const auto& live = loaded->timelines.at(0)->liveBytes;
        const int64_t n = static_cast<int64_t>(live.size());
        const std::vector<uint32_t> chosen = l.largest(3);  // big and two of embed's
        const auto groups = StackAggregates::compute(l, chosen, 0, n - 1, opts(8, 0.0, 0.0, static_cast<size_t>(n)));
        QVERIFY(groups.groupCount() >= 2);
        std::vector<int64_t> entries, lives;
        for (int64_t e = 0; e < n; ++e) {
            entries.push_back(e);
            lives.push_back(live[static_cast<size_t>(e)]);
        }
        const TimelineBands bands(l, chosen, entries, lives, &groups);
        QCOMPARE(bands.groupCount(), groups.groupCount());
        for (int c = 0; c < bands.width(); ++c) {
            int64_t sum = 0, left = bands.other(c);
            for (size_t g = 0; g < bands.groupCount(); ++g) {
                const int64_t expect = std::min(left, liveOf(l, groups.stack(g), chosen, c));
                QCOMPARE(bands.groupBytes(c, g), expect);
                // hit-testing: the bottom of each non-empty group is that group
                if (expect > 0) QCOMPARE(bands.hit(c, sum), TimelineBands::groupHit(g));
                sum += expect;
                left -= expect;
            }
            QVERIFY(sum <= bands.other(c));
            if (sum < bands.other(c)) QCOMPARE(bands.hit(c, sum), TimelineBands::kOther);
        }
        QVERIFY(TimelineBands::isGroupHit(TimelineBands::groupHit(0)));
        QCOMPARE(TimelineBands::groupOfHit(TimelineBands::groupHit(5)), size_t(5));
        QVERIFY(!TimelineBands::isGroupHit(TimelineBands::kOther) && !TimelineBands::isGroupHit(TimelineBands::kNothing));
    }
};

MEMLENS_CORE_TEST_MAIN(TestStackAggregates)
#include "tst_stackaggregates.moc"
