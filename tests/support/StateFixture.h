#pragma once
// Hand-built allocator states and a small synthetic snapshot with stacks, an oom entry and an
// expandable segment, read through the real reader. No Qt: the Qt-free view tests use it too.
#include "HandBuiltState.h"
#include "Synthetic.h"

#include <cstdint>
#include <utility>
#include <vector>

namespace viewtest {

using memlens::model::DeviceState;
using memlens::model::StateBlock;
using memlens::model::StateBlockKind;
using memlens::model::StateSegment;

constexpr uint64_t KiB = 1024, MiB = 1024 * KiB;

// A segment at `address` with blocks of the given sizes and kinds, laid out from its start.
inline StateSegment segmentOf(uint64_t address, const std::vector<std::pair<uint64_t, StateBlockKind>>& blocks,
                              bool expandable = false) {
    StateSegment s;
    s.address = address;
    s.isExpandable = expandable;
    uint64_t a = address;
    for (const auto& [size, kind] : blocks) {
        StateBlock b;
        b.address = a;
        b.size = size;
        b.requestedSize = kind == StateBlockKind::Free ? 0 : size;
        b.kind = kind;
        s.blocks.push_back(b);
        a += size;
    }
    s.totalSize = a - address;
    return s;
}

using handbuilt::stateOf;

// Two segments (one expandable), three stacks with native, torch and user frames, and a trace
// whose entry 6 is an oom: 64 MiB asked with 22 MiB cached free and 30 MiB free on the device.
//   0 segment_alloc S1 20 MiB   1 alloc S1 4 MiB (A)   2 alloc S1+4M 8 MiB (B)   3 segment_map E 20 MiB
//   4 alloc E 6 MiB (C)   5 free_requested S1 (A)   6 oom 64 MiB   7 free_completed S1 (A)
inline memlens::model::Snapshot syntheticSnapshot() {
    using namespace synth;
    constexpr uint64_t S1 = 0x7f0000000000, E = 0x7f1000000000;
    auto native = [] { return frame("c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc", "??", 0); };
    P fa = list({native(), frame("at::empty_cuda", "EmptyTensor.cpp", 0),
                 frame("linear", "/venv/lib/python3.11/site-packages/torch/nn/modules/linear.py", 125),
                 frame("_call_impl", "/venv/lib/python3.11/site-packages/torch/nn/modules/module.py", 1747),
                 frame("forward", "/home/me/model.py", 42), frame("train_step", "/home/me/train.py", 88)});
    P fb = list({native(), frame("attention", "/home/me/model.py", 57), frame("train_step", "/home/me/train.py", 88)});
    P fc = list({native(), frame("step", "/venv/lib/python3.11/site-packages/torch/optim/adamw.py", 210),
                 frame("train_step", "/home/me/train.py", 95)});
    P oom = dict({{"action", str("oom")}, {"device_free", unum(30 * MiB)}, {"size", unum(64 * MiB)},
                  {"stream", num(0)}, {"frames", fb}});
    P seg1 = segment(0, S1,
                     {{S1, 4 * MiB, 4 * MiB, "inactive", nullptr},
                      {S1 + 4 * MiB, 8 * MiB, 8 * MiB - 1000, "active_allocated", fb},
                      {S1 + 12 * MiB, 8 * MiB, 0, "inactive", nullptr}});
    P seg2 = segment(0, E, {{E, 6 * MiB, 6 * MiB, "active_allocated", fc}, {E + 6 * MiB, 14 * MiB, 0, "inactive", nullptr}},
                     true);
    return read(snapshot({seg1, seg2}, {{entry("segment_alloc", S1, 20 * MiB, nullptr, 10),
                                         entry("alloc", S1, 4 * MiB, fa, 20),
                                         entry("alloc", S1 + 4 * MiB, 8 * MiB - 1000, fb, 30),
                                         entry("segment_map", E, 20 * MiB, nullptr, 40),
                                         entry("alloc", E, 6 * MiB, fc, 50),
                                         entry("free_requested", S1, 4 * MiB, fa, 60), oom,
                                         entry("free_completed", S1, 4 * MiB, fa, 70)}}));
}

} // namespace viewtest
