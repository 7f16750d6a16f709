// AllocationLifetimes: allocs paired with their free_completed by address, frees without an alloc
// starting "before recording", blocks alive at the end running to the end, and the N largest.
#include "QtTestMain.h"
#include "TraceFixture.h"

#include "core/AllocationLifetimes.h"

#include <QtTest>

using namespace memlens::views;
using namespace tracetest;

class TestAllocationLifetimes : public QObject {
    Q_OBJECT

private slots:
    void pairsSmallTrace() {
        const auto loaded = load(smallTrace());
        const AllocationLifetimes& l = *loaded->lifetimes.at(0);
        const auto& trace = loaded->snapshot->device(0)->trace;
        QCOMPARE(l.size(), size_t(5));
        // sorted by begin: E (before recording) first
        QVERIFY(l[0].allocatedBeforeRecording());
        QCOMPARE(l.address(0, trace), slot(5));
        QCOMPARE(l[0].end, int64_t(10));
        QCOMPARE(l.bytes(0), 128 * KiB);
        QVERIFY(l[0].liveAt(-1));
        QVERIFY(l[0].liveAt(9));
        QVERIFY(!l[0].liveAt(10));
        // A: alive to the end (12 entries)
        QCOMPARE(l[1].begin, int64_t(1));
        QCOMPARE(l[1].end, int64_t(12));
        QCOMPARE(l.address(1, trace), slot(0));
        // B: 2 -> 5 (free requested at 4: still live until its free_completed)
        QCOMPARE(l[2].begin, int64_t(2));
        QCOMPARE(l[2].end, int64_t(5));
        QVERIFY(l[2].liveAt(4));
        QCOMPARE(l.bytes(2), 512 * KiB);
        // C: 3 -> 9
        QCOMPARE(l[3].begin, int64_t(3));
        QCOMPARE(l[3].end, int64_t(9));
        // D reuses B's address: a lifetime of its own
        QCOMPARE(l[4].begin, int64_t(7));
        QCOMPARE(l.address(4, trace), slot(1));
        QCOMPARE(l[4].end, int64_t(12));
        QVERIFY(l.stack(1) != 0);  // stacks come from the alloc
    }

    void largest() {
        const auto loaded = load(smallTrace());
        const AllocationLifetimes& l = *loaded->lifetimes.at(0);
        // sizes: E 128K, A 1M, B 512K, C 256K, D 768K -> the two largest are A and D, in index order
        QCOMPARE(l.largest(2), (std::vector<uint32_t>{1, 4}));
        QCOMPARE(l.largest(0), std::vector<uint32_t>{});
        QCOMPARE(l.largest(100).size(), size_t(5));
    }

    void largestPrefersTheEarlierOfEqualSizes() {
        // sizes by index: 4K 8K 8K 2K 8K 8K -> of the three largest, the first three 8K ones
        const auto loaded = load({{"alloc", slot(0), 4 * KiB}, {"alloc", slot(1), 8 * KiB}, {"alloc", slot(2), 8 * KiB},
                                  {"alloc", slot(3), 2 * KiB}, {"alloc", slot(4), 8 * KiB}, {"alloc", slot(5), 8 * KiB}});
        const AllocationLifetimes& l = *loaded->lifetimes.at(0);
        QCOMPARE(l.size(), size_t(6));
        QCOMPARE(l.largest(3), (std::vector<uint32_t>{1, 2, 4}));
        QCOMPARE(l.largest(5), (std::vector<uint32_t>{0, 1, 2, 4, 5}));
    }

    void mostVisibleWeighsBytesByTheSpanInView() {
        // S: 4 KiB alive throughout; B: 1 MiB for one entry; then 500 allocations of 512 bytes,
        // one entry each (entries 3 + 2k .. 4 + 2k)
        std::vector<Entry> t = {{"alloc", slot(0), 4 * KiB}, {"alloc", slot(1), 1024 * KiB},
                                     {"free_completed", slot(1), 1024 * KiB}};
        for (int k = 0; k < 500; ++k) {
            t.push_back({"alloc", slot(2), 512});
            t.push_back({"free_completed", slot(2), 512});
        }
        const auto loaded = load(t);
        const AllocationLifetimes& l = *loaded->lifetimes.at(0);
        QCOMPARE(l.size(), size_t(502));
        const EntryAxis axis = EntryAxis::byIndex(1003);
        // the whole trace: S covers 4 KiB x 1003 entries, more than B's 1 MiB x 1
        QCOMPARE(l.mostVisible(1, axis, 0, 1003), std::vector<uint32_t>{0});
        QCOMPARE(l.largest(1), std::vector<uint32_t>{1});
        // entries 1..2: B's 1 MiB against S's 4 KiB
        QCOMPARE(l.mostVisible(1, axis, 1, 2), std::vector<uint32_t>{1});
        // entries 500..600: S and the 50 small ones that live inside (k = 249..298, lifetimes 251..300);
        // B, not in view, is not chosen however many are asked for
        std::vector<uint32_t> expected = {0};
        for (uint32_t i = 251; i <= 300; ++i) expected.push_back(i);
        QCOMPARE(l.mostVisible(1000, axis, 500, 600), expected);
        QCOMPARE(l.mostVisible(0, axis, 0, 1003), std::vector<uint32_t>{});
        // the cover bound: S spans the whole view (1 view), B 1/1003 of it, each small one 1/1003
        QCOMPARE(l.mostVisible(1000, axis, 0, 1003, 1.0), std::vector<uint32_t>{0});
        QCOMPARE(l.mostVisible(1000, axis, 0, 1003, 1.0 + 3.5 / 1003).size(), size_t(4));  // S, B and two small ones
        QCOMPARE(l.mostVisible(1000, axis, 1, 2, 0.5), std::vector<uint32_t>{1});  // the first is always taken
    }

    void lostFreeIsClosedByTheNextAlloc() {
        const auto loaded = load({{"alloc", slot(0), 4 * KiB}, {"alloc", slot(0), 8 * KiB}, {"free_completed", slot(0), 8 * KiB}});
        const AllocationLifetimes& l = *loaded->lifetimes.at(0);
        QCOMPARE(l.size(), size_t(2));
        QCOMPARE(l[0].end, int64_t(1));
        QCOMPARE(l[1].begin, int64_t(1));
        QCOMPARE(l[1].end, int64_t(2));
    }

    void freeRequestedWithoutAllocStartsBeforeRecording() {
        const auto loaded = load({{"free_requested", slot(3), 4 * KiB}, {"free_completed", slot(3), 4 * KiB}});
        const AllocationLifetimes& l = *loaded->lifetimes.at(0);
        QCOMPARE(l.size(), size_t(1));
        QVERIFY(l[0].allocatedBeforeRecording());
        QCOMPARE(l[0].end, int64_t(1));
        QCOMPARE(l.address(0, loaded->snapshot->device(0)->trace), slot(3));
    }

    void whatNoEntryNamesIsKeptAside() {
        // a free_requested without its alloc and never completed: live to the end, its address
        // named by no alloc and no free; sizes of 4 GiB - 1 and more do not fit in 32 bits
        const uint64_t huge = 6 * 1024 * MiB, edge = 4 * 1024 * MiB - 1;
        const auto loaded = load({{"alloc", slot(0), huge}, {"free_requested", slot(7), 3 * KiB},
                                  {"alloc", slot(2), edge}, {"alloc", slot(3), edge - 1},
                                  {"free_completed", slot(0), huge}});
        const AllocationLifetimes& l = *loaded->lifetimes.at(0);
        const auto& trace = loaded->snapshot->device(0)->trace;
        QCOMPARE(l.size(), size_t(4));
        QVERIFY(l[0].allocatedBeforeRecording());
        QCOMPARE(l[0].end, int64_t(5));
        QCOMPARE(l.address(0, trace), slot(7));
        QCOMPARE(l.bytes(0), 3 * KiB);
        QCOMPARE(l.bytes(1), huge);
        QCOMPARE(l.address(1, trace), slot(0));
        QCOMPARE(l.bytes(2), edge);
        QCOMPARE(l.bytes(3), edge - 1);
        QCOMPARE(l.largest(1), std::vector<uint32_t>{1});
        QCOMPARE(l.largest(3), (std::vector<uint32_t>{1, 2, 3}));
    }

    void blocksTheTraceNeverMentionsLiveThroughout() {
        using namespace synth;
        // G was allocated before recording and is still there; X is allocated in the trace
        const uint64_t G = slot(0), X = slot(4);
        P seg = segment(0, kBase, {{G, 2 * MiB, 2 * MiB - 100, "active_allocated", framesOf("weights")},
                                   {kBase + 2 * MiB, 2 * MiB, 0, "inactive", nullptr},
                                   {X, 1 * MiB, 1 * MiB, "active_allocated", nullptr},
                                   {kBase + 5 * MiB, 3 * MiB, 0, "inactive", nullptr}});
        const auto snap = read(snapshot({seg}, {{entry("alloc", X, 1 * MiB, nullptr, 1), entry("snapshot", 0, 0, nullptr, 2)}}));
        const AllocationLifetimes fromTrace = AllocationLifetimes::compute(snap.devices[0].trace);
        QCOMPARE(fromTrace.size(), size_t(1));
        const AllocationLifetimes l = AllocationLifetimes::compute(snap.devices[0]);
        QCOMPARE(l.size(), size_t(2));
        QVERIFY(l[0].allocatedBeforeRecording());
        QCOMPARE(l.address(0, snap.devices[0].trace), G);
        QCOMPARE(l.bytes(0), 2 * MiB - 100);
        QCOMPARE(l[0].end, int64_t(2));
        QVERIFY(l[0].liveAt(-1) && l[0].liveAt(1));
        QVERIFY(l.stack(0) != 0);  // the block's own stack
        QCOMPARE(l.address(1, snap.devices[0].trace), X);
        QCOMPARE(l.largest(1), std::vector<uint32_t>{0});
    }

    // Sizes of 4 GiB and more, and the stacks and sizes of lifetimes allocated before recording
    // (a free is all the trace has of them), read back as written.
    void sizesAndStacksOfEveryKindReadBack() {
        const uint64_t huge = (uint64_t(6) << 30) + 512, early = (uint64_t(5) << 30) + 1024;
        const auto loaded = load({{"alloc", slot(0), huge, -1, "big"},
                                  {"free_requested", slot(3), early, -1, "old"},
                                  {"free_completed", slot(3), early, -1, "old"},
                                  {"alloc", slot(1), 4 * KiB, -1, "small"},
                                  {"free_completed", slot(0), huge, -1, "big"}});
        const AllocationLifetimes& l = *loaded->lifetimes.at(0);
        const auto& trace = loaded->snapshot->device(0)->trace;
        QCOMPARE(l.size(), size_t(3));
        QVERIFY(l[0].allocatedBeforeRecording());
        QCOMPARE(l.bytes(0), early);
        QCOMPARE(l.stack(0), trace.stack[1]);  // its free's
        QCOMPARE(l[0].end, int64_t(2));
        QCOMPARE(l.bytes(1), huge);
        QCOMPARE(l.stack(1), trace.stack[0]);
        QCOMPARE(l[1].end, int64_t(4));
        QCOMPARE(l.bytes(2), 4 * KiB);
        QCOMPARE(l.stack(2), trace.stack[3]);
        QVERIFY(l.stack(0) != l.stack(1) && l.stack(1) != l.stack(2) && l.stack(0) != 0);
        QCOMPARE(l.largest(1), std::vector<uint32_t>{1});
    }

    void segmentsAndOomAreNotAllocations() {
        const auto loaded = load({{"segment_alloc", kBase, kSegment}, {"oom", 0, 64 * MiB}, {"segment_free", kBase, kSegment}});
        QCOMPARE(loaded->lifetimes.at(0)->size(), size_t(0));
    }
};

MEMLENS_CORE_TEST_MAIN(TestAllocationLifetimes)
#include "tst_allocationlifetimes.moc"
