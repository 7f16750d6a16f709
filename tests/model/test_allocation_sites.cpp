// AllocationSites: bottom-up and top-down trees by stack, on a small hand-made trace, against a
// brute-force aggregation of random traces, at allocator states, and on a long random trace (its
// timing is tests/bench/bench_sites.cpp, not a test).
#include "ColumnsBuilder.h"
#include "Synthetic.h"

#include "memlens/model/AllocationSites.h"
#include "memlens/model/ParseError.h"

#include <gtest/gtest.h>

#include <map>
#include <random>

using namespace memlens::model;

namespace {

using Builder = sitestest::ColumnsBuilder;

std::string nameOf(const Snapshot& s, FrameId f) {
    return f == kNoFrame ? std::string("<no stack>") : std::string(s.str(s.frames[f].name));
}

// "  name bytes/count live" per node below the root, indented by depth, in tree order
void dump(const Snapshot& s, const SiteTree& t, uint32_t node, int depth, std::vector<std::string>& out) {
    const SiteNode& n = t.nodes[node];
    for (uint32_t c = n.firstChild; c < n.firstChild + n.childCount; ++c) {
        const SiteNode& k = t.nodes[c];
        out.push_back(std::string(depth * 2, ' ') + nameOf(s, k.frame) + " " + std::to_string(k.bytes) + "/" +
                      std::to_string(k.count) + " live " + std::to_string(k.liveBytes));
        dump(s, t, c, depth + 1, out);
    }
}
std::vector<std::string> dump(const Snapshot& s, const SiteTree& t) {
    std::vector<std::string> out;
    dump(s, t, 0, 0, out);
    return out;
}

struct Agg {
    uint64_t bytes = 0, count = 0, liveBytes = 0, liveCount = 0;
    bool operator==(const Agg&) const = default;
};
using PathMap = std::map<std::vector<FrameId>, Agg>;

// Every node of the tree by its path from the root; checks the layout on the way.
void paths(const SiteTree& t, uint32_t node, std::vector<FrameId>& path, PathMap& out) {
    const SiteNode& n = t.nodes[node];
    uint64_t prev = UINT64_MAX;
    for (uint32_t c = n.firstChild; c < n.firstChild + n.childCount; ++c) {
        const SiteNode& k = t.nodes[c];
        ASSERT_EQ(k.parent, node);
        ASSERT_EQ(t.rowOf(c), c - n.firstChild);
        ASSERT_LE(k.bytes, prev) << "children sorted by bytes";
        prev = k.bytes;
        path.push_back(k.frame);
        ASSERT_EQ(out.count(path), 0u) << "a frame appears once among siblings";
        out[path] = Agg{k.bytes, k.count, k.liveBytes, k.liveCount};
        paths(t, c, path, out);
        path.pop_back();
    }
}
PathMap paths(const SiteTree& t) {
    PathMap out;
    std::vector<FrameId> p;
    paths(t, 0, p, out);
    return out;
}

// Brute force: each allocation adds itself to every prefix of its path.
void addPrefixes(PathMap& m, std::vector<FrameId> path, uint64_t bytes, bool live) {
    std::vector<FrameId> prefix;
    for (FrameId f : path) {
        prefix.push_back(f);
        Agg& a = m[prefix];
        a.bytes += bytes;
        a.count += 1;
        if (live) {
            a.liveBytes += bytes;
            a.liveCount += 1;
        }
    }
}

std::vector<FrameId> pathOf(const Snapshot& s, StackId st) {
    if (st == 0 || s.stackSize(st) == 0) return {kNoFrame};
    return std::vector<FrameId>(s.stackBegin(st), s.stackBegin(st) + s.stackSize(st));
}

} // namespace

TEST(AllocationSites, SmallTraceByHand) {
    Builder b;
    FrameId alloc = b.frame("malloc", "??", 0);
    FrameId linear = b.frame("linear", "/v/site-packages/torch/nn/functional.py", 1);
    FrameId conv = b.frame("conv2d", "/v/site-packages/torch/nn/functional.py", 2);
    FrameId forward = b.frame("forward", "model.py", 10);
    FrameId train = b.frame("train", "train.py", 20);
    StackId s1 = b.stack({alloc, linear, forward});
    StackId s2 = b.stack({alloc, conv, forward});
    StackId s3 = b.stack({alloc, linear, train});
    b.entry(Action::Alloc, 0x1000, 100, s1);        // 0, freed at 3
    b.entry(Action::Alloc, 0x2000, 200, s2);        // 1
    b.entry(Action::Alloc, 0x3000, 50, s1);         // 2
    b.entry(Action::FreeRequested, 0x1000, 100, s1);  // 3
    b.entry(Action::FreeCompleted, 0x1000, 100, s1);  // 4
    b.entry(Action::Alloc, 0x4000, 400, s3);        // 5
    b.entry(Action::Alloc, 0x5000, 10, 0);          // 6: no stack
    AllocationSites a = allocationSitesInRange(b.s, b.s.devices[0], 0, 6);
    EXPECT_EQ(a.totalBytes, 760u);
    EXPECT_EQ(a.totalCount, 5u);
    EXPECT_EQ(a.liveBytes, 660u);
    EXPECT_EQ(a.distinctStacks, 4u);
    EXPECT_EQ(a.bottomUp.root().bytes, 760u);
    EXPECT_EQ(dump(b.s, a.bottomUp), (std::vector<std::string>{
                                         "malloc 750/4 live 650",
                                         "  linear 550/3 live 450",
                                         "    train 400/1 live 400",
                                         "    forward 150/2 live 50",
                                         "  conv2d 200/1 live 200",
                                         "    forward 200/1 live 200",
                                         "<no stack> 10/1 live 10",
                                     }));
    EXPECT_EQ(dump(b.s, a.topDown), (std::vector<std::string>{
                                        "train 400/1 live 400",
                                        "  linear 400/1 live 400",
                                        "    malloc 400/1 live 400",
                                        "forward 350/3 live 250",
                                        "  conv2d 200/1 live 200",
                                        "    malloc 200/1 live 200",
                                        "  linear 150/2 live 50",
                                        "    malloc 150/2 live 50",
                                        "<no stack> 10/1 live 10",
                                    }));
    // the stack that brings the most bytes through a node
    const SiteNode& mallocNode = a.bottomUp.nodes[a.bottomUp.root().firstChild];
    EXPECT_EQ(mallocNode.topStack, s3);
    EXPECT_EQ(a.bottomUp.depthOf(a.bottomUp.root().firstChild), 1u);

    // a sub-range: the free at 3 falls outside [0, 2], so everything is live at its end
    AllocationSites r = allocationSitesInRange(b.s, b.s.devices[0], 0, 2);
    EXPECT_EQ(r.totalBytes, 350u);
    EXPECT_EQ(r.liveBytes, 350u);
    // native frames left out: the trees start at the Python line
    SitesOptions opt;
    opt.skipNative = true;
    AllocationSites py = allocationSitesInRange(b.s, b.s.devices[0], 0, 6, opt);
    EXPECT_EQ(dump(b.s, py.bottomUp), (std::vector<std::string>{
                                          "linear 550/3 live 450",
                                          "  train 400/1 live 400",
                                          "  forward 150/2 live 50",
                                          "conv2d 200/1 live 200",
                                          "  forward 200/1 live 200",
                                          "<no stack> 10/1 live 10",
                                      }));
    // a stack of native frames only loses its leading recording and allocator frames
    FrameId unwind = b.frame("torch::unwind::unwind()", "??", 0);
    FrameId cachingMalloc = b.frame("c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc", "", 0);
    FrameId empty = b.frame("at::detail::empty_cuda", "??", 0);
    FrameId engine = b.frame("torch::autograd::Engine::thread_main", "??", 0);
    StackId nativeOnly = b.stack({unwind, cachingMalloc, empty, engine});
    StackId onlyMachinery = b.stack({unwind, cachingMalloc});
    b.entry(Action::Alloc, 0x6000, 64, nativeOnly);     // 7
    b.entry(Action::Alloc, 0x7000, 32, onlyMachinery);  // 8
    AllocationSites nat = allocationSitesInRange(b.s, b.s.devices[0], 7, 8, opt);
    EXPECT_EQ(dump(b.s, nat.bottomUp), (std::vector<std::string>{
                                           "at::detail::empty_cuda 64/1 live 64",
                                           "  torch::autograd::Engine::thread_main 64/1 live 64",
                                           // nothing but machinery: its last frame stays
                                           "c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc 32/1 live 32",
                                       }));
    AllocationSites natAll = allocationSitesInRange(b.s, b.s.devices[0], 7, 8);
    EXPECT_EQ(dump(b.s, natAll.bottomUp)[0], "torch::unwind::unwind() 96/2 live 96");

    // an empty range
    AllocationSites none = allocationSitesInRange(b.s, b.s.devices[0], 3, 4);
    EXPECT_TRUE(none.bottomUp.empty());
    EXPECT_EQ(none.totalBytes, 0u);
}

TEST(AllocationSites, MatchesBruteForceOnRandomTraces) {
    std::mt19937_64 rng(12345);
    for (int round = 0; round < 5; ++round) {
        SCOPED_TRACE(round);
        Builder b;
        std::vector<FrameId> frames;
        for (int i = 0; i < 25; ++i)
            frames.push_back(b.frame("f" + std::to_string(i), i % 3 ? "m" + std::to_string(i) + ".py" : "??", i % 3 ? 5 : 0));
        std::vector<StackId> stacks = {0};
        for (int i = 0; i < 120; ++i) {
            std::vector<FrameId> st;
            size_t depth = rng() % 10;
            for (size_t d = 0; d < depth; ++d) st.push_back(frames[rng() % frames.size()]);
            stacks.push_back(b.stack(st));
        }
        std::vector<std::pair<uint64_t, StackId>> live;  // address, stack
        uint64_t nextAddr = 0x1000;
        for (int i = 0; i < 6000; ++i) {
            if (!live.empty() && rng() % 3 == 0) {
                size_t k = rng() % live.size();
                b.entry(Action::FreeRequested, live[k].first, 1, live[k].second);
                if (rng() % 2) b.entry(Action::FreeCompleted, live[k].first, 1, live[k].second);
                live.erase(live.begin() + static_cast<long>(k));
            } else if (rng() % 10 == 0) {
                b.entry(Action::SegmentAlloc, nextAddr, 2u << 20, 0);
                nextAddr += 512;
            } else {
                StackId st = stacks[rng() % stacks.size()];
                b.entry(Action::Alloc, nextAddr, 1 + rng() % 100000, st);
                live.push_back({nextAddr, st});
                nextAddr += 512;
            }
        }
        const TraceColumns& t = b.s.devices[0].trace;
        const int64_t n = static_cast<int64_t>(t.rows());
        int64_t first = static_cast<int64_t>(rng() % (n / 2)), last = first + static_cast<int64_t>(rng() % (n / 2));
        if (round == 0) first = 0, last = n - 1;
        for (bool skip : {false, true}) {
            SitesOptions opt;
            opt.skipNative = skip;
            AllocationSites a = allocationSitesInRange(b.s, b.s.devices[0], first, last, opt);
            PathMap up, down;
            uint64_t total = 0;
            for (int64_t i = first; i <= last; ++i) {
                if (t.action[i] != Action::Alloc) continue;
                bool freed = false;
                for (int64_t j = i + 1; j <= last && !freed; ++j)
                    freed = t.addr[j] == t.addr[i] && t.action[j] == Action::FreeRequested;
                std::vector<FrameId> p = pathOf(b.s, t.stack[i]);
                if (skip) {
                    std::vector<FrameId> py;
                    for (FrameId f : p)
                        if (f == kNoFrame || b.s.str(b.s.frames[f].filename) != "??") py.push_back(f);
                    if (!py.empty()) p = py;
                }
                addPrefixes(up, p, t.size[i], !freed);
                std::reverse(p.begin(), p.end());
                addPrefixes(down, p, t.size[i], !freed);
                total += t.size[i];
            }
            EXPECT_EQ(a.totalBytes, total);
            EXPECT_EQ(a.bottomUp.root().bytes, total);
            EXPECT_EQ(a.topDown.root().bytes, total);
            EXPECT_TRUE(paths(a.bottomUp) == up) << "bottom-up differs, skipNative " << skip;
            EXPECT_TRUE(paths(a.topDown) == down) << "top-down differs, skipNative " << skip;
        }
    }
}

TEST(AllocationSites, AtAnAllocatorState) {
    using namespace synth;
    constexpr uint64_t S = 0x100000;
    P fa = list({frame("empty", "??", 0), frame("make", "model.py", 3)});
    P fb = list({frame("empty", "??", 0), frame("other", "model.py", 4)});
    P seg = segment(0, S,
                    {{S, 1024, 1000, "active_allocated", fa},
                     {S + 1024, 1024, 700, "active_allocated", fb},
                     {S + 2048, 4096, 4000, "active_allocated", fa},
                     {S + 6144, (2u << 20) - 6144, 0, "inactive", nullptr}});
    Snapshot snap = read(snapshot({seg}, {{entry("alloc", S + 8192, 3000, fb), entry("free_requested", S + 8192, 3000, fb),
                                           entry("free_completed", S + 8192, 3000, fb)}}));
    StateHistory h(snap, 0);
    DeviceState st = h.stateAfter(h.entries() - 1);
    AllocationSites a = allocationSitesAt(snap, st);
    EXPECT_EQ(a.totalBytes, 5700u);
    EXPECT_EQ(a.totalCount, 3u);
    EXPECT_EQ(a.liveBytes, 5700u);
    EXPECT_EQ(dump(snap, a.bottomUp), (std::vector<std::string>{"empty 5700/3 live 5700", "  make 5000/2 live 5000",
                                                                "  other 700/1 live 700"}));
    // right after the alloc at entry 0 a fourth block is live (its stack from the trace)
    AllocationSites b = allocationSitesAt(snap, h.stateAfter(0));
    EXPECT_EQ(b.totalBytes, 8700u);
    EXPECT_EQ(b.totalCount, 4u);
    EXPECT_EQ(dump(snap, b.topDown), (std::vector<std::string>{"make 5000/2 live 5000", "  empty 5000/2 live 5000",
                                                               "other 3700/2 live 3700", "  empty 3700/2 live 3700"}));
    // costs by stack are sorted and add up
    auto costs = stackCostsAt(st);
    ASSERT_EQ(costs.size(), 2u);
    EXPECT_LT(costs[0].stack, costs[1].stack);
}

TEST(AllocationSites, ALongRandomTrace) {
    // the benchmark's trace (sitestest::longRandomTrace), shorter: every alloc freed again
    Builder b;
    sitestest::longRandomTrace(b, 100000);
    AllocationSites a = allocationSitesInRange(b.s, b.s.devices[0], 0, static_cast<int64_t>(b.trace().rows()) - 1);
    EXPECT_EQ(a.totalCount, 100000u);
    EXPECT_EQ(a.totalBytes, 100000u * 4096u);
    EXPECT_EQ(a.liveCount, 0u);
    // cancelling throws
    std::atomic<bool> cancel{true};
    SitesOptions opt;
    opt.cancel = &cancel;
    EXPECT_THROW(allocationSitesInRange(b.s, b.s.devices[0], 0, 1000, opt), Cancelled);
}
