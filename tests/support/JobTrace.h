#pragma once
// A training loop written as an allocator trace, with mistakes planted at sizes known in advance:
// the doctor's tests read what it diagnoses against the sizes chosen here. Qt-free.
//
// Every iteration: an input batch (train.py:35), a forward pass of `layers` modules each saving a
// `activation`-byte tensor (model.py, called through Module._call_impl), a 512-byte loss,
// backward (the autograd engine's C++ frames) freeing the activations and allocating one
// gradient per parameter, an optimizer step (torch/optim/adam.py; its state made in the first
// step and kept), zero_grad freeing the gradients, and the batch freed. Annotated with
// ProfilerStep#N ranges, or not (the doctor then finds the iterations from the pattern).
#include "Synthetic.h"

#include <map>
#include <string>
#include <vector>

namespace jobtrace {

using namespace synth;
constexpr uint64_t KiB = 1024, MiB = 1024 * KiB;
constexpr uint64_t kBase = 0x7f0000000000ull;

struct Job {
    int iterations = 8;
    int layers = 4;
    uint64_t batch = 2 * MiB;
    std::vector<uint64_t> batches;  // when given: iteration i's batch is batches[(i - 1) % size] (inputs of varying length)
    uint64_t activation = 4 * MiB;
    int parameters = 3;
    uint64_t parameter = 1 * MiB;
    bool annotate = true;
    bool cutLast = false;  // the trace ends in the middle of one more iteration's forward pass
    // every layer runs the same code (a loop over identical blocks, as transformers do): two
    // allocations per layer in forward (the same two stacks for all layers), one temporary per
    // layer in backward
    bool sameLayerCode = false;
    bool stepAnnotations = false;  // only the optimizer's Optimizer.step#Adam.step ranges (torch's own)

    // mistakes
    std::vector<uint64_t> graphKept;  // per iteration: tensors of train.py:81's computation kept together
    uint64_t keptLogits = 0;          // the last layer's output kept (one forward stack), this size
    int keptLogitsWindow = 0;         // > 0: only the last this many iterations' outputs are kept (a bounded cache)
    uint64_t cacheGrowth = 0;         // train.py:60 allocates this much per iteration into a cache
    bool gradsKept = false;           // gradients allocated once and zeroed in place
};

class Writer {
public:
    std::vector<P> trace;
    std::vector<P> annotations;
    std::map<uint64_t, uint64_t> live;  // address -> size
    int64_t time = 1000;
    uint64_t next = kBase;

    uint64_t alloc(uint64_t size, const P& frames) {
        const uint64_t addr = next;
        next += (size + 511) / 512 * 512;
        live[addr] = size;
        trace.push_back(entry("alloc", addr, size, frames, time += 10));
        return addr;
    }
    void free(uint64_t addr) {
        const uint64_t size = live.at(addr);
        live.erase(addr);
        trace.push_back(entry("free_requested", addr, size, nullptr, time += 10));
        trace.push_back(entry("free_completed", addr, size, nullptr, time += 10));
    }
    void note(const std::string& stage, const std::string& name) {
        annotations.push_back(dict({{"device", num(0)}, {"time_us", num(time += 5)}, {"name", str(name)}, {"stage", str(stage)}}));
    }
};

inline P userFrames(const std::string& name, int line, std::vector<P> inner = {}) {
    inner.push_back(frame(name, "/home/me/train.py", line));
    inner.push_back(frame("<module>", "/home/me/train.py", 99));
    return list(inner);
}
inline P forwardFrames(int layer) {
    return userFrames("train_step", 40,
                      {frame("linear", "/venv/lib/python3.11/site-packages/torch/nn/functional.py", 2000),
                       frame("forward", "/home/me/model.py", 10 + layer),
                       frame("_call_impl", "/venv/lib/python3.11/site-packages/torch/nn/modules/module.py", 1527)});
}
inline P backwardFrames() {
    return list({frame("torch::autograd::Engine::thread_main(std::shared_ptr<torch::autograd::GraphTask> const&)", "??", 0),
                 frame("torch::autograd::Engine::thread_init(int, std::shared_ptr<torch::autograd::ReadyQueue> const&, bool)", "??", 0)});
}
inline P optimizerFrames() {
    return userFrames("train_step", 50,
                      {frame("_single_tensor_adam", "/venv/lib/python3.11/site-packages/torch/optim/adam.py", 400),
                       frame("step", "/venv/lib/python3.11/site-packages/torch/optim/adam.py", 200)});
}

inline std::string pickle(const Job& job) {
    Writer w;
    std::vector<uint64_t> params, grads, keptOutputs;
    for (int p = 0; p < job.parameters; ++p)
        params.push_back(w.alloc(job.parameter, userFrames("main", 20, {frame("_apply", "/venv/lib/python3.11/site-packages/torch/nn/modules/module.py", 900)})));
    bool stateMade = false;
    const int total = job.iterations + (job.cutLast ? 1 : 0);
    for (int i = 1; i <= total; ++i) {
        const bool cut = job.cutLast && i == total;
        const std::string name = "ProfilerStep#" + std::to_string(i);
        if (job.annotate) w.note("START", name);
        const uint64_t batchBytes = job.batches.empty() ? job.batch : job.batches[static_cast<size_t>(i - 1) % job.batches.size()];
        const uint64_t batch = w.alloc(batchBytes, userFrames("main", 35));
        std::vector<uint64_t> acts;
        for (int l = 0; l < job.layers; ++l) {
            acts.push_back(w.alloc(job.activation, forwardFrames(job.sameLayerCode ? 0 : l)));
            if (job.sameLayerCode) acts.push_back(w.alloc(job.activation / 2, forwardFrames(100)));
        }
        if (cut) break;
        if (job.keptLogits) {  // kept: never freed, or freed once the window has moved past it
            keptOutputs.push_back(w.alloc(job.keptLogits, forwardFrames(job.layers)));
            if (job.keptLogitsWindow > 0 && keptOutputs.size() > static_cast<size_t>(job.keptLogitsWindow)) {
                w.free(keptOutputs.front());
                keptOutputs.erase(keptOutputs.begin());
            }
        }
        const uint64_t loss = w.alloc(512, userFrames("train_step", 41, {frame("cross_entropy", "/venv/lib/python3.11/site-packages/torch/nn/functional.py", 3000),
                                                                    frame("forward", "/venv/lib/python3.11/site-packages/torch/nn/modules/loss.py", 1100),
                                                                    frame("_call_impl", "/venv/lib/python3.11/site-packages/torch/nn/modules/module.py", 1527)}));
        for (size_t k = 0; k < job.graphKept.size(); ++k)  // aux term's graph kept by losses.append
            w.alloc(job.graphKept[k], userFrames("main", 81, {frame("aux_entropy", "/home/me/train.py", 70 + static_cast<int>(k))}));
        if (job.cacheGrowth) w.alloc(job.cacheGrowth, userFrames("main", 60));
        // backward
        if (job.sameLayerCode)
            for (int l = 0; l < job.layers; ++l) {
                P frames = list({frame("AddmmBackward0::apply", "??", 0), frame("torch::autograd::Engine::evaluate_function", "??", 0)});
                w.free(w.alloc(job.activation / 4, frames));
            }
        for (uint64_t a : acts) w.free(a);
        if (grads.empty())
            for (int p = 0; p < job.parameters; ++p) grads.push_back(w.alloc(job.parameter, backwardFrames()));
        w.free(loss);
        // step
        if (job.stepAnnotations) w.note("START", "Optimizer.step#Adam.step");
        if (!stateMade) {
            for (int p = 0; p < 2 * job.parameters; ++p) w.alloc(job.parameter, optimizerFrames());
            stateMade = true;
        }
        const uint64_t tmp = w.alloc(job.parameter, optimizerFrames());
        w.free(tmp);
        if (job.stepAnnotations) w.note("END", "Optimizer.step#Adam.step");
        // zero_grad(set_to_none=True) frees them; in place keeps them
        if (!job.gradsKept) {
            for (uint64_t g : grads) w.free(g);
            grads.clear();
        }
        w.free(batch);
        if (job.annotate) w.note("END", name);
    }
    // the final state: one segment over everything ever allocated, live blocks in it
    std::vector<BlockSpec> blocks;
    uint64_t at = kBase;
    const uint64_t end = (w.next - kBase + (2 * MiB - 1)) / (2 * MiB) * (2 * MiB) + kBase;
    for (const auto& [addr, size] : w.live) {
        if (addr > at) blocks.push_back({at, addr - at, 0, "inactive", nullptr});
        const uint64_t rounded = (size + 511) / 512 * 512;
        blocks.push_back({addr, rounded, size, "active_allocated", nullptr});
        at = addr + rounded;
    }
    if (at < end) blocks.push_back({at, end - at, 0, "inactive", nullptr});
    P snap = dict({{"segments", list({segment(0, kBase, blocks)})},
                   {"device_traces", list({list(w.trace)})},
                   {"allocator_settings", dict({{"PYTORCH_CUDA_ALLOC_CONF", str("")}})},
                   {"external_annotations", list(w.annotations)}});
    return dumps(snap, 4);
}

} // namespace jobtrace
