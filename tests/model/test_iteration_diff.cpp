// survivorsOf against a brute-force reading of the rule on random traces: an alloc in an
// iteration of the range survives unless the next entry at its address (an alloc, a
// free_requested, an old trace's free) is a free at or before aliveAfter. The next entry being an
// alloc takes the address over: the earlier block is never freed as far as the trace says.
#include "memlens/model/IterationDiff.h"

#include "../support/ColumnsBuilder.h"

#include <gtest/gtest.h>

#include <map>
#include <random>

using namespace memlens::model;

namespace {

struct Expected {
    uint64_t bytes = 0, count = 0;
    std::map<StackId, std::vector<int32_t>> allocs;  // by stack, in trace order
    std::map<StackId, std::vector<uint64_t>> perIteration;
};

Expected bruteForce(const TraceColumns& t, const std::vector<Iteration>& its, size_t from, size_t to, int64_t aliveAfter) {
    Expected e;
    const int64_t n = static_cast<int64_t>(t.rows());
    for (size_t k = from; k <= to; ++k) {
        for (int64_t i = its[k].firstEntry; i <= its[k].lastEntry && i < n; ++i) {
            if (t.action[static_cast<size_t>(i)] != Action::Alloc) continue;
            bool freed = false;
            for (int64_t j = i + 1; j < n; ++j) {
                if (t.addr[static_cast<size_t>(j)] != t.addr[static_cast<size_t>(i)]) continue;
                const Action a = t.action[static_cast<size_t>(j)];
                if (a == Action::Alloc) break;
                if (a == Action::FreeRequested || a == Action::Free) {
                    freed = j <= aliveAfter;
                    break;
                }
            }
            if (freed) continue;
            const StackId st = t.stack[static_cast<size_t>(i)];
            e.bytes += t.size[static_cast<size_t>(i)];
            e.count += 1;
            e.allocs[st].push_back(static_cast<int32_t>(i));
            auto& per = e.perIteration[st];
            per.resize(to - from + 1);
            per[k - from] += t.size[static_cast<size_t>(i)];
        }
    }
    return e;
}

} // namespace

TEST(IterationDiff, SurvivorsAgreeWithTheRuleReadEntryByEntry) {
    for (unsigned seed = 1; seed <= 40; ++seed) {
        std::mt19937_64 rng(seed);
        sitestest::ColumnsBuilder b;
        const FrameId f = b.frame("f", "x.py", 1);
        for (int s = 0; s < 4; ++s) b.stack({f});
        const int entries = 300 + static_cast<int>(rng() % 300);
        for (int i = 0; i < entries; ++i) {
            const uint64_t addr = 0x7f0000000000ULL + (rng() % 24) * 512;
            const uint64_t r = rng() % 10;
            const Action a = r < 4 ? Action::Alloc : r < 7 ? Action::FreeRequested : r < 9 ? Action::FreeCompleted : Action::Free;
            b.entry(a, addr, 512 * (1 + rng() % 8), static_cast<StackId>(rng() % 4));
        }
        // iterations of random lengths with gaps between some of them
        std::vector<Iteration> its;
        for (int64_t e = static_cast<int64_t>(rng() % 10); e < entries;) {
            Iteration it;
            it.number = static_cast<int64_t>(its.size()) + 1;
            it.firstEntry = e;
            it.lastEntry = std::min<int64_t>(entries - 1, e + 10 + static_cast<int64_t>(rng() % 60));
            its.push_back(it);
            e = it.lastEntry + 1 + (rng() % 3 == 0 ? static_cast<int64_t>(rng() % 5) : 0);
        }
        const TraceColumns& t = b.trace();
        for (int q = 0; q < 20; ++q) {
            const size_t from = rng() % its.size(), to = from + rng() % (its.size() - from);
            // alive after the range's end, or later, or (an odd question) inside it
            const int64_t aliveAfter = q % 4 == 0 ? its[from].firstEntry + static_cast<int64_t>(rng() % 20)
                                                  : its[to].lastEntry + (q % 2 ? static_cast<int64_t>(rng() % 100) : 0);
            const Survivors got = survivorsOf(t, its, from, to, aliveAfter);
            const Expected want = bruteForce(t, its, from, to, aliveAfter);
            SCOPED_TRACE("seed " + std::to_string(seed) + ", iterations " + std::to_string(from) + ".." + std::to_string(to) +
                         ", alive after " + std::to_string(aliveAfter));
            EXPECT_EQ(got.bytes, want.bytes);
            EXPECT_EQ(got.count, want.count);
            ASSERT_EQ(got.groups.size(), want.allocs.size());
            for (size_t g = 0; g < got.groups.size(); ++g) {
                const SurvivorGroup& sg = got.groups[g];
                ASSERT_TRUE(want.allocs.count(sg.stack)) << sg.stack;
                EXPECT_EQ(sg.allocs, want.allocs.at(sg.stack));
                EXPECT_EQ(sg.perIteration, want.perIteration.at(sg.stack));
                EXPECT_EQ(sg.count, sg.allocs.size());
                if (g > 0) {
                    EXPECT_GE(got.groups[g - 1].bytes, sg.bytes);  // largest first
                }
            }
        }
    }
}
