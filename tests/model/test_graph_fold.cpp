// Folding one retained graph for display: parameters (with their AccumulateGrad nodes and the
// views on the way) folded into the node that uses them; repeated structure (identical
// transformer blocks) folded into one copy with a count. Expected node and edge counts are
// worked out from the hand-built graphs.
#include "GraphScanBuilder.h"

#include "memlens/model/GraphScans.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

using namespace memlens::model;
using namespace graphtest;

namespace {

struct Builder {
    Json nodes = Json::array();
    Json edges = Json::array();
    uint32_t add(Json n) {
        nodes.push_back(std::move(n));
        return static_cast<uint32_t>(nodes.size() - 1);
    }
    void edge(uint32_t a, uint32_t b) { edges.push_back({a, b}); }
    // a weight reached through TBackward0, as nn.Linear's
    void weight(uint32_t user, uint64_t bytes) {
        const uint32_t t = add(node("TBackward0"));
        edge(user, t);
        edge(t, add(param({static_cast<int64_t>(bytes / 4)}, bytes)));
    }
    RetainedGraph build() const {
        Json g = graph("model_out", "model_out", 0);
        g["nodes_list"] = nodes;
        g["edges"] = edges;
        g["nodes"] = nodes.size();
        return parseGraphScanJson(scanText({g})).graphs.at(0);
    }
};

// The graph of nn.Sequential(Linear(64, 32), ReLU(), Linear(32, 8)) as the agent lists it (the
// order of a real scan of tests/capture/graphs/jobs/validation_kept.py).
RetainedGraph mlp() {
    Builder b;
    const uint32_t out = b.add(node("AddmmBackward0", {saved("mat1", 2048, 0x100), saved("mat2", 1024, 0x200, "alive", true)}));
    const uint32_t bias2 = b.add(param({8}, 32));
    const uint32_t relu = b.add(node("ReluBackward0", {saved("result", 2048, 0x100)}));
    const uint32_t t2 = b.add(node("TBackward0"));
    const uint32_t in = b.add(node("AddmmBackward0", {saved("mat1", 4096, 0x300)}));
    const uint32_t w2 = b.add(param({8, 32}, 1024));
    const uint32_t bias1 = b.add(param({32}, 128));
    const uint32_t t1 = b.add(node("TBackward0"));
    const uint32_t w1 = b.add(param({32, 64}, 8192));
    for (auto [x, y] : std::vector<std::pair<uint32_t, uint32_t>>{
             {out, bias2}, {out, relu}, {out, t2}, {relu, in}, {t2, w2}, {in, bias1}, {in, t1}, {t1, w1}})
        b.edge(x, y);
    return b.build();
}

// A transformer-like stack: loss <- head <- 12 blocks <- embedding. Block i (residual MLP):
//   A_i = AddBackward0  -> M2_i (MmBackward0, weight), A_{i-1} (residual)
//   M2_i -> G_i (GeluBackward0) -> M1_i (MmBackward0, weight, saves 1 KiB) -> L_i (layer norm,
//   weight and bias) -> A_{i-1}
RetainedGraph stack(int blocks) {
    Builder b;
    const uint32_t loss = b.add(node("SumBackward0"));
    const uint32_t head = b.add(node("MmBackward0", {saved("self", 512, 0x10)}));
    b.edge(loss, head);
    b.weight(head, 4096);
    std::vector<uint32_t> adds, lns;
    for (int i = 0; i < blocks; ++i) {
        const uint64_t base = 0x10000 + 0x1000 * static_cast<uint64_t>(i);
        const uint32_t a = b.add(node("AddBackward0"));
        const uint32_t m2 = b.add(node("MmBackward0", {saved("self", 2048, base)}));
        b.weight(m2, 4096);
        const uint32_t g = b.add(node("GeluBackward0", {saved("self", 2048, base)}));
        const uint32_t m1 = b.add(node("MmBackward0", {saved("self", 1024, base + 0x800)}));
        b.weight(m1, 4096);
        const uint32_t ln = b.add(node("NativeLayerNormBackward0", {saved("input", 1024, base + 0xc00)}));
        b.edge(ln, b.add(param({64}, 256)));
        b.edge(ln, b.add(param({64}, 256)));
        b.edge(a, m2);
        b.edge(m2, g);
        b.edge(g, m1);
        b.edge(m1, ln);
        if (adds.empty()) b.edge(head, a);
        else {
            b.edge(adds.back(), a);  // residual
            b.edge(lns.back(), a);
        }
        adds.push_back(a);
        lns.push_back(ln);
    }
    const uint32_t emb = b.add(node("EmbeddingBackward0", {saved("indices", 256, 0x20)}));
    b.edge(emb, b.add(param({100, 64}, 25600)));
    b.edge(adds.back(), emb);
    b.edge(lns.back(), emb);
    return b.build();
}

std::multiset<std::string> names(const FoldedGraph& f) {
    std::multiset<std::string> out;
    for (const auto& n : f.nodes) out.insert(n.name);
    return out;
}

bool hasEdge(const FoldedGraph& f, const std::string& from, const std::string& to) {
    return std::any_of(f.edges.begin(), f.edges.end(),
                       [&](const FoldedEdge& e) { return f.nodes[e.from].name == from && f.nodes[e.to].name == to; });
}

} // namespace

TEST(GraphFold, ParametersFoldIntoTheNodeThatUsesThem) {
    const RetainedGraph g = mlp();
    ASSERT_EQ(g.nodesList.size(), 9u);
    const FoldedGraph f = foldGraph(g);
    // 9 nodes: 2 Addmm, 1 Relu are left; 4 parameters (and 2 TBackward0) fold into the Addmms
    ASSERT_EQ(f.nodes.size(), 3u);
    EXPECT_EQ(f.foldedParameters, 4);
    EXPECT_EQ(names(f), (std::multiset<std::string>{"AddmmBackward0", "AddmmBackward0", "ReluBackward0"}));
    ASSERT_EQ(f.edges.size(), 2u);
    EXPECT_TRUE(hasEdge(f, "AddmmBackward0", "ReluBackward0"));
    EXPECT_TRUE(hasEdge(f, "ReluBackward0", "AddmmBackward0"));
    const FoldedNode& out = f.nodes[static_cast<size_t>(f.nodeOf[0])];
    EXPECT_EQ(out.parameters, 2);
    EXPECT_EQ(out.parameterBytes, 32u + 1024u);
    EXPECT_EQ(out.savedBytes, 2048u);  // mat2 is the weight: not counted
    EXPECT_EQ(f.nodes[static_cast<size_t>(f.nodeOf[4])].parameterBytes, 128u + 8192u);
    // every original node maps somewhere; the weights' nodes to their user
    for (size_t v = 0; v < 9; ++v) EXPECT_GE(f.nodeOf[v], 0) << v;
    EXPECT_EQ(f.nodeOf[3], f.nodeOf[0]);  // TBackward0 -> the first Addmm
    EXPECT_EQ(f.nodeOf[8], f.nodeOf[4]);
    EXPECT_TRUE(f.repeats.empty());

    const FoldedGraph plain = foldGraph(g, {.parameters = false, .repeats = false});
    EXPECT_EQ(plain.nodes.size(), 9u);
    EXPECT_EQ(plain.edges.size(), 8u);
}

TEST(GraphFold, IdenticalBlocksFoldWithCounts) {
    const RetainedGraph g = stack(12);
    // loss, head + T + W, 12 x (A, M2+T+W, G, M1+T+W, LN + 2 params), embedding + W
    ASSERT_EQ(g.nodesList.size(), 4u + 12u * 11u + 2u);

    const FoldedGraph params = foldGraph(g, {.parameters = true, .repeats = false});
    EXPECT_EQ(params.nodes.size(), 2u + 12u * 5u + 1u);
    EXPECT_EQ(params.foldedParameters, 1 + 12 * 4 + 1);

    const FoldedGraph f = foldGraph(g);
    // loss, head, one block of 5, embedding
    ASSERT_EQ(f.nodes.size(), 8u);
    ASSERT_EQ(f.repeats.size(), 1u);
    EXPECT_EQ(f.repeats[0].count, 12);
    EXPECT_EQ(f.repeats[0].nodesPerBlock, 5);
    EXPECT_EQ(f.repeats[0].nodes.size(), 5u);
    EXPECT_EQ(f.repeats[0].label, "\u00d7 12 identical blocks of 5 nodes");
    for (uint32_t v : f.repeats[0].nodes) {
        EXPECT_EQ(f.nodes[v].copies, 12);
        EXPECT_EQ(f.nodes[v].repeat, 0);
        EXPECT_EQ(f.nodes[v].members.size(), 12u);
    }
    // block-internal edges once; the residual and block-to-block edges are gone; the last
    // block's way out to the embedding stays
    EXPECT_EQ(f.edges.size(), 8u);
    EXPECT_TRUE(hasEdge(f, "SumBackward0", "MmBackward0"));
    EXPECT_TRUE(hasEdge(f, "MmBackward0", "AddBackward0"));
    EXPECT_TRUE(hasEdge(f, "AddBackward0", "MmBackward0"));
    EXPECT_TRUE(hasEdge(f, "MmBackward0", "GeluBackward0"));
    EXPECT_TRUE(hasEdge(f, "GeluBackward0", "MmBackward0"));
    EXPECT_TRUE(hasEdge(f, "MmBackward0", "NativeLayerNormBackward0"));
    EXPECT_TRUE(hasEdge(f, "AddBackward0", "EmbeddingBackward0"));
    EXPECT_TRUE(hasEdge(f, "NativeLayerNormBackward0", "EmbeddingBackward0"));
    EXPECT_FALSE(hasEdge(f, "AddBackward0", "AddBackward0"));
    // figures over all copies
    const auto ln = std::find_if(f.nodes.begin(), f.nodes.end(), [](const FoldedNode& n) { return n.name == "NativeLayerNormBackward0"; });
    ASSERT_NE(ln, f.nodes.end());
    EXPECT_EQ(ln->savedBytes, 12u * 1024u);
    EXPECT_EQ(ln->parameters, 24);
    EXPECT_EQ(ln->parameterNodes.size(), 2u);  // the first copy's
    // every original node maps to a folded one
    for (size_t v = 0; v < g.nodesList.size(); ++v) EXPECT_GE(f.nodeOf[v], 0) << v;
}

TEST(GraphFold, ShortRunsAndMinRepeats) {
    // two blocks fold with the default minimum, not with minRepeats = 3
    const RetainedGraph g = stack(2);
    EXPECT_EQ(foldGraph(g).repeats.size(), 1u);
    EXPECT_EQ(foldGraph(g).nodes.size(), 8u);
    const FoldedGraph f = foldGraph(g, {.parameters = true, .repeats = true, .minRepeats = 3});
    EXPECT_TRUE(f.repeats.empty());
    EXPECT_EQ(f.nodes.size(), 2u + 2u * 5u + 1u);
}

TEST(GraphFold, AlternatingBlocksFoldWithAPeriod) {
    // Linear, ReLU, Linear, ReLU ... (8 layers): each node is its own segment; the block is the
    // pair (Addmm, Relu)
    Builder b;
    uint32_t prev = b.add(node("SumBackward0"));
    for (int i = 0; i < 8; ++i) {
        const uint32_t mm = b.add(node("AddmmBackward0", {saved("mat1", 256, 0x100 + static_cast<uint64_t>(i) * 0x100)}));
        b.edge(prev, mm);
        b.edge(mm, b.add(param({8}, 32)));
        b.weight(mm, 1024);
        const uint32_t relu = b.add(node("ReluBackward0", {saved("result", 256, 0x100 + static_cast<uint64_t>(i) * 0x100)}));
        b.edge(mm, relu);
        prev = relu;
    }
    const RetainedGraph g = b.build();
    const FoldedGraph f = foldGraph(g);
    ASSERT_EQ(f.repeats.size(), 1u);
    EXPECT_EQ(f.repeats[0].count, 8);
    EXPECT_EQ(f.repeats[0].nodesPerBlock, 2);
    EXPECT_EQ(f.nodes.size(), 3u);  // Sum, Addmm x8, Relu x8
    EXPECT_EQ(f.edges.size(), 2u);
    const auto mm = std::find_if(f.nodes.begin(), f.nodes.end(), [](const FoldedNode& n) { return n.name == "AddmmBackward0"; });
    EXPECT_EQ(mm->parameters, 16);
    EXPECT_EQ(mm->savedBytes, 8u * 256u);
}

TEST(GraphFold, NothingRepeatsNothingFolds) {
    Builder b;
    const uint32_t a = b.add(node("MulBackward0", {saved("self", 64, 0x1)}));
    const uint32_t c = b.add(node("ExpBackward0", {saved("result", 64, 0x2)}));
    const uint32_t d = b.add(node("SinBackward0", {saved("self", 64, 0x3)}));
    const uint32_t e = b.add(node("torch::autograd::AccumulateGrad"));  // a leaf input, not a parameter
    b.edge(a, c);
    b.edge(c, d);
    b.edge(d, e);
    b.edge(a, e);
    const FoldedGraph f = foldGraph(b.build());
    EXPECT_EQ(f.nodes.size(), 4u);
    EXPECT_EQ(f.edges.size(), 4u);
    EXPECT_EQ(f.foldedParameters, 0);
    EXPECT_TRUE(f.repeats.empty());
}

TEST(GraphFold, EmptyAndBrokenEdges) {
    EXPECT_TRUE(foldGraph(RetainedGraph{}).nodes.empty());
    // a cycle in a damaged list must not hang the folding
    Builder b;
    const uint32_t x = b.add(node("AddBackward0"));
    const uint32_t y = b.add(node("MulBackward0"));
    const uint32_t z = b.add(node("MulBackward0"));
    b.edge(x, y);
    b.edge(y, z);
    b.edge(z, y);
    const FoldedGraph f = foldGraph(b.build());
    EXPECT_EQ(f.nodes.size(), 3u);
}

TEST(GraphFold, BlocksFoldWithParametersShown) {
    // the search for blocks ignores parameter subtrees, which then fold along with their block
    const FoldedGraph f = foldGraph(stack(12), {.parameters = false, .repeats = true});
    ASSERT_EQ(f.repeats.size(), 1u);
    EXPECT_EQ(f.repeats[0].count, 12);
    EXPECT_EQ(f.repeats[0].nodesPerBlock, 11);
    EXPECT_EQ(f.nodes.size(), 4u + 11u + 2u);
    EXPECT_EQ(f.foldedParameters, 0);
}
