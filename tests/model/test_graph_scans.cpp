// Graph scans of a session: parsing the stored JSON, grouping roots by referrer pattern across
// scans, and how each group grows (per phase), on hand-built scans whose figures are worked out
// here.
#include "GraphScanBuilder.h"

#include "memlens/model/GraphScans.h"

#include <gtest/gtest.h>

using namespace memlens::model;
using namespace graphtest;

namespace {

std::vector<SessionIteration> phases(const std::vector<std::pair<int, std::string>>& runs) {
    std::vector<SessionIteration> out;
    int64_t i = 0;
    for (const auto& [count, phase] : runs)
        for (int k = 0; k < count; ++k) {
            SessionIteration it;
            it.index = ++i;
            it.phase = phase;
            out.push_back(it);
        }
    return out;
}

GraphScan stored(int64_t id, int64_t iteration, const std::string& phase, const std::string& text, bool partial = false) {
    GraphScan s;
    s.id = id;
    s.iteration = iteration;
    s.phase = phase;
    s.timeUs = 1000 * iteration;
    s.partial = partial;
    s.json = text;
    return s;
}

// Iterations 1-3 train, 4-5 eval, 6-8 train, 9-10 eval; a scan after each.
//   __main__.kept[*]          one more 6.5 KiB graph per eval iteration, never freed
//   train.loss                one 4-byte graph, replaced every iteration
//   __main__.train_losses[*]  one more skeleton graph (4 B) per iteration
//   debug.tmp                 1 MiB, only in the scan of iteration 5
class GraphGroups : public ::testing::Test {
protected:
    void SetUp() override {
        const auto its = phases({{3, "train"}, {2, "eval"}, {3, "train"}, {2, "eval"}});
        std::vector<GraphScan> rows;
        std::vector<int64_t> keptSince;
        for (int64_t i = 1; i <= 10; ++i) {
            const std::string phase = its[static_cast<size_t>(i - 1)].phase;
            if (phase == "eval") keptSince.push_back(i);
            std::vector<Json> graphs;
            for (size_t k = 0; k < keptSince.size(); ++k)
                graphs.push_back(graph("__main__.kept[" + std::to_string(k) + "]", "__main__.kept[*]", 6656, keptSince[k]));
            graphs.push_back(graph("train.loss", "train.loss", 4, i));
            for (int64_t k = 1; k <= i; ++k)
                graphs.push_back(graph("__main__.train_losses[" + std::to_string(k - 1) + "]", "__main__.train_losses[*]", 4,
                                       k, 0, 1));
            if (i == 5) graphs.push_back(graph("debug.tmp", "debug.tmp", 1 << 20, 5));
            rows.push_back(stored(i, i, phase, scanText(graphs)));
        }
        scans = GraphScans::fromStored(rows, its);
    }
    size_t group(const std::string& pattern) const {
        const int g = scans.groupIndex(pattern);
        EXPECT_GE(g, 0) << pattern;
        return static_cast<size_t>(g);
    }
    GraphScans scans;
};

} // namespace

TEST(GraphScanParse, ReadsEveryField) {
    Json g = graph("validate.kept_outputs[0]", "validate.kept_outputs[*]", 6656, 4);
    g["referrers"] = {"validate.kept_outputs[0]", "__main__.alias"};
    g["exclusive_bytes"] = 4096;
    g["root_shape"] = {16, 8};
    g["root_dtype"] = "float32";
    g["root_grad_fn"] = "AddmmBackward0";
    g["backward_ran"] = false;
    g["signature"] = "adae22c54027";
    g["nodes_list"] = {node("AddmmBackward0", {saved("mat1", 2048, 0x7f0000001000), saved("mat2", 1024, 0x7f0000002000, "alive", true)}),
                       param({8}, 32), node("MulBackward0", {saved("other", 0, 0, "released"), saved("self", 0, 0, "hooked")})};
    g["edges"] = {{0, 1}, {0, 2}, {2, 7}, {-1, 0}};  // the last two point outside the list: dropped
    g["storages"] = {{{"ptr", 0x7f0000001000}, {"bytes", 2048}, {"device", "cuda:0"}}};
    const GraphScanData d = parseGraphScan(stored(7, 4, "eval", scanText({g}, true)));
    EXPECT_EQ(d.id, 7);
    EXPECT_EQ(d.iteration, 4);
    EXPECT_EQ(d.phase, "eval");
    EXPECT_TRUE(d.partial);
    EXPECT_EQ(d.hookDetection, "memory");
    EXPECT_EQ(d.totalRetainedBytes, 6656u);  // no total stored: the sum of the graphs
    ASSERT_EQ(d.graphs.size(), 1u);
    const RetainedGraph& r = d.graphs[0];
    EXPECT_EQ(r.root, "validate.kept_outputs[0]");
    EXPECT_EQ(r.referrers.size(), 2u);
    EXPECT_EQ(r.pattern, "validate.kept_outputs[*]");
    EXPECT_EQ(r.retainedBytes, 6656u);
    EXPECT_EQ(r.exclusiveBytes, 4096u);
    EXPECT_EQ(r.firstSeen, 4);
    EXPECT_EQ(r.rootShape, (std::vector<int64_t>{16, 8}));
    EXPECT_EQ(r.rootGradFn, "AddmmBackward0");
    ASSERT_EQ(r.nodesList.size(), 3u);
    EXPECT_EQ(r.edges.size(), 2u);
    EXPECT_TRUE(r.savedListed);
    const GraphNodeInfo& addmm = r.nodesList[0];
    ASSERT_EQ(addmm.saved.size(), 2u);
    EXPECT_EQ(addmm.saved[0].shapeText(), "[512] float32");
    EXPECT_EQ(*addmm.saved[0].ptr, 0x7f0000001000u);
    EXPECT_TRUE(addmm.saved[0].isCuda());
    EXPECT_TRUE(addmm.saved[1].param);
    EXPECT_EQ(addmm.savedBytes(), 2048u);  // the parameter is not counted
    EXPECT_TRUE(r.nodesList[1].isAccumulateGrad());
    EXPECT_TRUE(r.nodesList[1].param);
    EXPECT_EQ(r.nodesList[1].shortName(), "AccumulateGrad");
    EXPECT_EQ(r.nodesList[2].savedCount(SavedState::Released), 1);
    EXPECT_EQ(r.nodesList[2].savedCount(SavedState::Hooked), 1);
    EXPECT_FALSE(r.nodesList[2].saved[0].inspected);
    ASSERT_EQ(r.storages.size(), 1u);
    EXPECT_EQ(r.storages[0].bytes, 2048u);
}

TEST(GraphScanParse, BadTextSaysSo) {
    const GraphScanData d = parseGraphScan(stored(1, 3, "train", "{not json"));
    EXPECT_FALSE(d.error.empty());
    EXPECT_TRUE(d.graphs.empty());
    EXPECT_EQ(d.iteration, 3);
    const GraphScanData e = parseGraphScan(stored(2, 3, "train", "[1, 2]"));
    EXPECT_FALSE(e.error.empty());
    // a graph with odd field types keeps what it can
    const GraphScanData f = parseGraphScanJson(R"({"graphs": [{"root": 5, "retained_bytes": "x", "nodes_list": [7]}]})");
    ASSERT_EQ(f.graphs.size(), 1u);
    EXPECT_EQ(f.graphs[0].root, "?");
    EXPECT_EQ(f.graphs[0].retainedBytes, 0u);
}

TEST(GraphScanParse, LibTorchWalkerSaysSavedTensorsAreNotListed) {
    Json g = graph("losses[0]", "losses[*]", 4);
    g["saved_listed"] = false;
    Json s{{"walker", "libtorch"},
           {"saved_tensors_note", "saved tensors: not listed (LibTorch does not expose them)"},
           {"graphs", {g}}};
    const GraphScanData d = parseGraphScanJson(s.dump(), 3, "train");
    EXPECT_EQ(d.walker, "libtorch");
    EXPECT_EQ(d.note, "saved tensors: not listed (LibTorch does not expose them)");
    ASSERT_EQ(d.graphs.size(), 1u);
    EXPECT_FALSE(d.graphs[0].savedListed);
    GraphScans scans({d});
    EXPECT_FALSE(scans.groups()[0].points[0].savedListed);
}

TEST_F(GraphGroups, GroupsByPatternWithCountsAndBytesPerScan) {
    ASSERT_EQ(scans.scans().size(), 10u);
    ASSERT_EQ(scans.groups().size(), 4u);
    const RootGroup& kept = scans.groups()[group("__main__.kept[*]")];
    const std::vector<int64_t> counts{0, 0, 0, 1, 2, 2, 2, 2, 3, 4};
    for (size_t s = 0; s < 10; ++s) {
        EXPECT_EQ(kept.points[s].graphs, counts[s]) << "scan " << s;
        EXPECT_EQ(kept.points[s].bytes, static_cast<uint64_t>(counts[s]) * 6656u) << "scan " << s;
    }
    EXPECT_EQ(kept.firstSeen, 4);
    EXPECT_EQ(kept.firstScan, 3u);
    const RootGroup& losses = scans.groups()[group("__main__.train_losses[*]")];
    EXPECT_EQ(losses.points[9].graphs, 10);
    EXPECT_EQ(losses.points[9].savedReleased, 10);
    EXPECT_EQ(losses.points[9].savedAlive, 0);
    EXPECT_EQ(losses.firstSeen, 1);
    EXPECT_EQ(scans.groups()[group("debug.tmp")].firstSeen, 5);
    EXPECT_EQ(scans.graphsOf(group("__main__.kept[*]"), 9).size(), 4u);
}

TEST_F(GraphGroups, GrowthFollowsThePhaseItHappensIn) {
    const GroupGrowth kept = scans.growth(group("__main__.kept[*]"), 9);
    EXPECT_EQ(kept.kind, GroupGrowth::Kind::Growing);
    EXPECT_EQ(kept.phase, "eval");
    EXPECT_DOUBLE_EQ(kept.graphsPerStep, 1.0);
    EXPECT_DOUBLE_EQ(kept.bytesPerStep, 6656.0);
    EXPECT_EQ(kept.since, 4);
    EXPECT_EQ(kept.text, "+1 graph, +6.5 KiB per eval iteration since iteration 4");

    const GroupGrowth losses = scans.growth(group("__main__.train_losses[*]"), 9);
    EXPECT_EQ(losses.kind, GroupGrowth::Kind::Growing);
    EXPECT_EQ(losses.phase, "");
    EXPECT_EQ(losses.text, "+1 graph, +4 B per iteration since iteration 1");

    const GroupGrowth loss = scans.growth(group("train.loss"), 9);
    EXPECT_EQ(loss.kind, GroupGrowth::Kind::Steady);
    EXPECT_EQ(loss.text, "steady: 1 graph since iteration 1");
}

TEST_F(GraphGroups, SteppingShowsGroupsAppearAndGoAway) {
    const size_t tmp = group("debug.tmp");
    // iteration 5: new; iteration 6: gone (and listed, last); iteration 7: no longer listed
    EXPECT_EQ(scans.growth(tmp, 4).kind, GroupGrowth::Kind::Single);
    EXPECT_EQ(scans.growth(tmp, 4).text, "new at iteration 5");
    EXPECT_EQ(scans.growth(tmp, 5).kind, GroupGrowth::Kind::Gone);
    EXPECT_EQ(scans.growth(tmp, 5).text, "gone at iteration 6");
    EXPECT_EQ(scans.growth(tmp, 7).text, "gone at iteration 6");
    const auto at5 = scans.groupsAt(4);
    ASSERT_EQ(at5.size(), 4u);
    EXPECT_EQ(at5.front(), tmp);  // 1 MiB: the largest
    const auto at6 = scans.groupsAt(5);
    ASSERT_EQ(at6.size(), 4u);
    EXPECT_EQ(at6.back(), tmp);
    EXPECT_EQ(scans.groupsAt(6).size(), 3u);
    // ordered by bytes in that scan
    const auto at10 = scans.groupsAt(9);
    ASSERT_EQ(at10.size(), 3u);
    EXPECT_EQ(scans.groups()[at10[0]].pattern, "__main__.kept[*]");
    EXPECT_EQ(scans.groups()[at10[1]].pattern, "__main__.train_losses[*]");
    EXPECT_EQ(scans.groups()[at10[2]].pattern, "train.loss");
    // the first kept graph: new at iteration 4; in the eval run so far, one per eval iteration
    EXPECT_EQ(scans.growth(group("__main__.kept[*]"), 3).text, "new at iteration 4");
    EXPECT_EQ(scans.growth(group("__main__.kept[*]"), 4).text, "+1 graph, +6.5 KiB per eval iteration since iteration 4");
    EXPECT_TRUE(scans.groupsAt(0).size() == 2u);  // kept is not there yet
}

TEST_F(GraphGroups, ScanAtIteration) {
    EXPECT_EQ(scans.scanAtIteration(0), -1);
    EXPECT_EQ(scans.scanAtIteration(1), 0);
    EXPECT_EQ(scans.scanAtIteration(10), 9);
    EXPECT_EQ(scans.scanAtIteration(99), 9);
}

TEST(GraphGrowth, OneGraphEveryTwoIterations) {
    std::vector<GraphScan> rows;
    for (int s = 1; s <= 4; ++s) {
        std::vector<Json> graphs;
        for (int k = 0; k < s; ++k) graphs.push_back(graph("keep[" + std::to_string(k) + "]", "keep[*]", 100));
        rows.push_back(stored(s, 2 * s, "train", scanText(graphs)));
    }
    GraphScans scans = GraphScans::fromStored(rows, phases({{8, "train"}}));
    const GroupGrowth g = scans.growth(0, 3);
    EXPECT_EQ(g.kind, GroupGrowth::Kind::Growing);
    EXPECT_DOUBLE_EQ(g.graphsPerStep, 0.5);
    EXPECT_DOUBLE_EQ(g.bytesPerStep, 50.0);
    EXPECT_EQ(g.text, "+1 graph every 2 iterations (+50 B per iteration) since iteration 2");
}

TEST(GraphGrowth, WithoutIterationsTheScansPhasesCount) {
    std::vector<GraphScan> rows;
    for (int s = 1; s <= 3; ++s) {
        std::vector<Json> graphs;
        for (int k = 0; k < s; ++k) graphs.push_back(graph("out[" + std::to_string(k) + "]", "out[*]", 2 << 20));
        rows.push_back(stored(s, s, "eval", scanText(graphs)));
    }
    GraphScans scans = GraphScans::fromStored(rows);
    EXPECT_EQ(scans.growth(0, 2).text, "+1 graph, +2 MiB per iteration since iteration 1");
}

TEST(GraphGrowth, BytesOnlyAndShrinking) {
    // one graph whose bytes grow (a list of outputs concatenated into it), then half of it freed
    std::vector<GraphScan> rows;
    const uint64_t bytes[] = {1000, 2000, 3000, 1500};
    for (int s = 0; s < 4; ++s) rows.push_back(stored(s + 1, s + 1, "train", scanText({graph("acc", "acc", bytes[s])})));
    GraphScans scans = GraphScans::fromStored(rows, phases({{4, "train"}}));
    EXPECT_EQ(scans.growth(0, 2).text, "+1000 B per iteration since iteration 1");
    const GroupGrowth shrink = scans.growth(0, 3);
    EXPECT_EQ(shrink.kind, GroupGrowth::Kind::Shrinking);
    EXPECT_EQ(shrink.text, "-1.5 KiB since iteration 3");
}

TEST(GraphGrowth, PartialScansAreNotReadForGrowth) {
    // the partial scan at iteration 3 missed the group: neither "gone" nor a drop
    std::vector<GraphScan> rows;
    const int counts[] = {1, 2, 0, 4};
    for (int s = 0; s < 4; ++s) {
        std::vector<Json> graphs;
        for (int k = 0; k < counts[s]; ++k) graphs.push_back(graph("keep[" + std::to_string(k) + "]", "keep[*]", 10));
        graphs.push_back(graph("other", "other", 1));
        rows.push_back(stored(s + 1, s + 1, "train", scanText(graphs, s == 2), s == 2));
    }
    GraphScans scans = GraphScans::fromStored(rows, phases({{4, "train"}}));
    const GroupGrowth g = scans.growth(0, 3);
    EXPECT_EQ(g.kind, GroupGrowth::Kind::Growing);
    EXPECT_DOUBLE_EQ(g.graphsPerStep, 1.0);
    EXPECT_EQ(scans.growth(0, 2).text, "gone at iteration 3 (partial scan)");
}
