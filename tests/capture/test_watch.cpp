// memlens::capture::watch on CPU (Debian's LibTorch 1.13): a small LibTorch training loop that
// keeps its losses (the classic leak) and its eval outputs, watched by name; the session file the
// capture library writes is read back with the model's GraphScans: scans at the scheduled
// iterations, node names and edges from Node::next_edges(), AccumulateGrad leaves, the note that
// saved tensors are not listed, growth per phase, roots held weakly, roots sharing a node grouped.
#include "memlens/capture/Session.h"
#include "memlens/capture/Watch.h"
#include "memlens/capture/WatchModel.h"
#include "memlens/model/GraphScans.h"
#include "memlens/model/SessionFile.h"

#include <torch/torch.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <filesystem>
#include <set>

using namespace memlens;
namespace fs = std::filesystem;

namespace {

struct TempFile {
    TempFile() {
        std::string t = (fs::temp_directory_path() / "memlens-watch-XXXXXX").string();
        if (!::mkdtemp(t.data())) throw std::runtime_error("mkdtemp");
        dir = t;
    }
    ~TempFile() {
        std::error_code ec;
        fs::remove_all(dir, ec);
    }
    std::string file(const std::string& name) const { return (dir / name).string(); }
    fs::path dir;
};

capture::SessionOptions fileOnly(const std::string& out) {
    capture::SessionOptions o;
    o.output = out;
    o.useRecorder = false;
    o.sampleIntervalMs = 0;
    return o;
}

std::set<std::string> nodeNames(const model::RetainedGraph& g) {
    std::set<std::string> out;
    for (const auto& n : g.nodesList) out.insert(n.name);
    return out;
}

} // namespace

TEST(Watch, ScanOfAWatchedGraph) {
    capture::unwatchAll();
    torch::manual_seed(0);
    torch::nn::Sequential model(torch::nn::Linear(16, 32), torch::nn::ReLU(), torch::nn::Linear(32, 4));
    auto x = torch::randn({8, 16});
    auto out = model->forward(x);
    capture::watch(out, "validate.kept[0]");
    EXPECT_EQ(capture::watchedCount(), 1u);
    const auto scan = capture::scanWatched(3, "eval");
    EXPECT_EQ(scan["walker"], "libtorch");
    EXPECT_EQ(scan["saved_tensors_note"], "saved tensors: not listed (LibTorch does not expose them)");
    ASSERT_EQ(scan["graphs"].size(), 1u);
    const auto& g = scan["graphs"][0];
    EXPECT_EQ(g["root"], "validate.kept[0]");
    EXPECT_EQ(g["pattern"], "validate.kept[*]");
    EXPECT_EQ(g["root_grad_fn"], "AddmmBackward0");
    EXPECT_EQ(g["root_shape"], nlohmann::json({8, 4}));
    EXPECT_EQ(g["root_dtype"], "float32");
    EXPECT_FALSE(g["saved_listed"].get<bool>());
    EXPECT_EQ(g["retained_bytes"], 8 * 4 * 4);  // the root only
    EXPECT_EQ(g["first_seen"], 3);

    // through the model's parser, as the window reads it
    const model::GraphScanData d = model::parseGraphScanJson(scan.dump(), 3, "eval");
    ASSERT_EQ(d.graphs.size(), 1u);
    const model::RetainedGraph& r = d.graphs[0];
    EXPECT_FALSE(r.savedListed);
    EXPECT_EQ(d.note, "saved tensors: not listed (LibTorch does not expose them)");
    // Linear -> AddmmBackward0 (+ TBackward0, weight and bias AccumulateGrad) x 2, ReLU; the input
    // needs no grad: no node for it
    EXPECT_EQ(r.nodes, 9);
    ASSERT_EQ(r.nodesList.size(), 9u);
    EXPECT_EQ(r.edges.size(), 8u);
    EXPECT_EQ(nodeNames(r), (std::set<std::string>{"AddmmBackward0", "ReluBackward0", "TBackward0", "torch::autograd::AccumulateGrad"}));
    int params = 0;
    for (const auto& n : r.nodesList) {
        EXPECT_TRUE(n.saved.empty());
        if (n.isAccumulateGrad()) {
            ++params;
            ASSERT_TRUE(n.variable);
            EXPECT_TRUE(n.param);
            EXPECT_TRUE(n.variable->ptr);
            EXPECT_EQ(n.variable->dtype, "float32");
        } else {
            // what the node receives: the forward output's dtype (the shape where the headers allow)
            ASSERT_FALSE(n.outputs.empty()) << n.name;
            EXPECT_EQ(n.outputs[0].dtype, "float32");
            EXPECT_EQ(n.outputs[0].device, "cpu");
        }
    }
    EXPECT_EQ(params, 4);
    // every edge runs from a node to one of its next functions
    for (const auto& [a, b] : r.edges) EXPECT_LT(a, b);
    // the window's folding: the 4 parameters (and 2 TBackward0) fold into the Addmms
    const model::FoldedGraph f = model::foldGraph(r);
    EXPECT_EQ(f.nodes.size(), 3u);
    EXPECT_EQ(f.foldedParameters, 4);
    capture::unwatchAll();
}

TEST(Watch, WeakRootsAndSharedNodes) {
    capture::unwatchAll();
    auto w = torch::randn({4, 4}, torch::requires_grad());
    {
        auto y = (w * 2).sum();
        capture::watch(y, "tmp");
        EXPECT_EQ(capture::scanWatched()["graphs"].size(), 1u);
    }
    // y is gone: nothing keeps it, watching did not either
    EXPECT_EQ(capture::scanWatched()["graphs"].size(), 0u);
    EXPECT_EQ(capture::watchedCount(), 0u);
    // two names for one tensor: one graph, two referrers; a tensor without grad_fn is no root
    auto z = w.exp();
    capture::watch(z, "cache.b");
    capture::watch(z, "cache.a");
    capture::watch(torch::ones({2}), "plain");
    auto scan = capture::scanWatched();
    ASSERT_EQ(scan["graphs"].size(), 1u);
    EXPECT_EQ(scan["graphs"][0]["roots"], 2);
    EXPECT_EQ(scan["graphs"][0]["root"], "cache.a");
    EXPECT_EQ(scan["graphs"][0]["referrers"].size(), 2u);
    // watching a name again replaces its tensor
    auto z2 = w.sin();
    capture::watch(z2, "cache.a");
    scan = capture::scanWatched();
    ASSERT_EQ(scan["graphs"].size(), 2u);
    std::set<std::string> fns;
    for (const auto& g : scan["graphs"]) fns.insert(g["root_grad_fn"].get<std::string>());
    EXPECT_EQ(fns, (std::set<std::string>{"ExpBackward0", "SinBackward0"}));
    capture::unwatch("cache.a");
    EXPECT_EQ(capture::scanWatched()["graphs"].size(), 1u);
    capture::unwatchAll();
    EXPECT_EQ(capture::watchedCount(), 0u);
}

TEST(Watch, SessionRecordsScansOfALeakingLoop) {
    capture::unwatchAll();
    TempFile tmp;
    const std::string out = tmp.file("watch.memlens");
    {
        torch::manual_seed(0);
        torch::nn::Sequential model(torch::nn::Linear(16, 32), torch::nn::ReLU(), torch::nn::Linear(32, 4));
        torch::optim::SGD opt(model->parameters(), torch::optim::SGDOptions(0.01));
        std::vector<torch::Tensor> losses, kept;
        capture::Session session(fileOnly(out));
        for (int epoch = 0; epoch < 2; ++epoch) {
            for (int s = 0; s < 4; ++s) {  // train: every loss kept after backward (skeleton graphs)
                auto loss = model->forward(torch::randn({8, 16})).pow(2).mean();
                opt.zero_grad();
                loss.backward();
                opt.step();
                losses.push_back(loss);
                capture::watch(losses.back(), "train.losses[" + std::to_string(losses.size() - 1) + "]");
                session.step("train");
            }
            for (int s = 0; s < 2; ++s) {  // eval without NoGradGuard: outputs kept (full graphs)
                kept.push_back(model->forward(torch::randn({8, 16})));
                capture::watch(kept.back(), "validate.kept[" + std::to_string(kept.size() - 1) + "]");
                session.step("eval");
            }
        }
        session.finish();
    }
    capture::unwatchAll();

    model::SessionFile f(out);
    ASSERT_EQ(f.iterations().size(), 12u);
    // a scan after each of the first 10 iterations (11 and 12 are not every 10th), and at exit
    const auto& stored = f.graphScans();
    ASSERT_EQ(stored.size(), 11u);
    const model::GraphScans scans = model::GraphScans::fromStored(stored, f.iterations());
    const auto& last = scans.scans().back();
    EXPECT_EQ(last.trigger, "exit");
    EXPECT_EQ(last.walker, "libtorch");
    EXPECT_EQ(last.graphs.size(), 8u + 4u);
    // grouped by name pattern; the kept outputs grow by one per eval iteration
    const int keptGroup = scans.groupIndex("validate.kept[*]");
    const int lossGroup = scans.groupIndex("train.losses[*]");
    ASSERT_GE(keptGroup, 0);
    ASSERT_GE(lossGroup, 0);
    const size_t at10 = static_cast<size_t>(scans.scanAtIteration(10));
    EXPECT_EQ(scans.scans()[at10].iteration, 10);
    EXPECT_EQ(scans.groups()[static_cast<size_t>(keptGroup)].points[at10].graphs, 2);  // iterations 5 and 6
    EXPECT_EQ(scans.groups()[static_cast<size_t>(lossGroup)].points[at10].graphs, 8);
    EXPECT_EQ(scans.groups()[static_cast<size_t>(keptGroup)].firstSeen, 5);
    const model::GroupGrowth kg = scans.growth(static_cast<size_t>(keptGroup), at10);
    EXPECT_EQ(kg.kind, model::GroupGrowth::Kind::Growing);
    EXPECT_EQ(kg.phase, "eval");
    EXPECT_EQ(kg.text, "+1 graph, +128 B per eval iteration since iteration 5");  // [8, 4] float32 each
    const model::GroupGrowth lg = scans.growth(static_cast<size_t>(lossGroup), at10);
    EXPECT_EQ(lg.phase, "train");
    EXPECT_EQ(lg.text, "+1 graph, +4 B per train iteration since iteration 1");
    // a loss graph: mean <- pow <- the model
    for (const auto& g : last.graphs) {
        EXPECT_FALSE(g.savedListed);
        if (g.root == "train.losses[0]") {
            EXPECT_EQ(g.rootGradFn, "MeanBackward0");
            EXPECT_TRUE(nodeNames(g).count("PowBackward0"));
            EXPECT_EQ(g.nodes, 11);
            EXPECT_EQ(g.firstSeen, 1);
        }
    }
}

TEST(Watch, ScansCanBeTurnedOff) {
    capture::unwatchAll();
    TempFile tmp;
    const std::string out = tmp.file("off.memlens");
    {
        auto o = fileOnly(out);
        o.capture.agentExtra = {{"graph_scans", false}};
        capture::Session session(o);
        auto w = torch::randn({4}, torch::requires_grad());
        auto y = w * 3;
        capture::watch(y, "y");
        for (int i = 0; i < 3; ++i) session.step("train");
        capture::recordWatched(session, "train");  // asked for: recorded anyway
    }
    capture::unwatchAll();
    model::SessionFile f(out);
    ASSERT_EQ(f.graphScans().size(), 1u);
    const auto d = model::parseGraphScan(f.graphScans()[0]);
    EXPECT_EQ(d.trigger, "request");
    EXPECT_EQ(d.iteration, 3);
    ASSERT_EQ(d.graphs.size(), 1u);
    EXPECT_EQ(d.graphs[0].rootGradFn, "MulBackward1");  // by a scalar
}

// The categories a snapshot's info carries for a watched model and optimizer (WatchModel.h): the
// storages of the parameters, gradients and optimizer state, by address and size, each once.
TEST(Watch, CategoriesOfAWatchedModelAndOptimizer) {
    EXPECT_TRUE(capture::detail::watchedCategories().empty());  // nothing watched
    auto net = std::make_shared<torch::nn::LinearImpl>(16, 8);   // weight 8x16, bias 8 (float)
    torch::optim::Adam adam(net->parameters(), torch::optim::AdamOptions(1e-3));
    capture::watchModel(net);
    capture::watchOptimizer(adam);
    auto byPtr = [](const nlohmann::json& list) {
        std::map<uintptr_t, uint64_t> m;
        for (const auto& e : list) m[e[0].get<uintptr_t>()] = e[1].get<uint64_t>();
        return m;
    };
    auto ptr = [](const at::Tensor& t) { return reinterpret_cast<uintptr_t>(t.storage().data()); };
    // before a step: parameters only
    nlohmann::json c = capture::detail::watchedCategories();
    std::map<uintptr_t, uint64_t> params = {{ptr(net->weight), 8 * 16 * 4}, {ptr(net->bias), 8 * 4}};
    EXPECT_EQ(byPtr(c["parameter"]), params);
    EXPECT_TRUE(c["gradient"].empty());
    EXPECT_TRUE(c["optimizer_state"].empty());
    // after a step: gradients and Adam's exp_avg and exp_avg_sq per parameter
    net->forward(torch::randn({4, 16})).sum().backward();
    adam.step();
    c = capture::detail::watchedCategories();
    EXPECT_EQ(byPtr(c["parameter"]), params);
    std::map<uintptr_t, uint64_t> grads = {{ptr(net->weight.grad()), 8 * 16 * 4}, {ptr(net->bias.grad()), 8 * 4}};
    EXPECT_EQ(byPtr(c["gradient"]), grads);
    std::map<uintptr_t, uint64_t> state;
    for (auto& [key, s] : adam.state()) {
        auto& a = static_cast<torch::optim::AdamParamState&>(*s);
        state[ptr(a.exp_avg())] = a.exp_avg().numel() * 4;
        state[ptr(a.exp_avg_sq())] = a.exp_avg_sq().numel() * 4;
    }
    ASSERT_EQ(state.size(), 4u);
    EXPECT_EQ(byPtr(c["optimizer_state"]), state);
    uint64_t stateBytes = 0;
    for (auto& [p, b] : state) stateBytes += b;
    EXPECT_EQ(stateBytes, 2u * (8 * 16 + 8) * 4);
    capture::unwatchModel();
    EXPECT_TRUE(capture::detail::watchedCategories().empty());
}
