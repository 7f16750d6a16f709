#pragma once
// Test helper: a small snapshot with what torch after 2.11 adds, built the way torch's sources build
// it (torch/csrc/cuda/memory_snapshot.cpp, torch/cuda/memory.py), with contents known by
// construction:
//   * device 0: a default-pool segment A (2 MiB), a MemPool segment B (pool (0, 1), 20 MiB) made
//     inside a compiled region, and a CUDA-graph segment C (pool (1, 0), 2 MiB) made before the
//     trace's first entry: its ring buffer of 9 entries overflowed (trace_alloc_max_entries [9],
//     trace_alloc_overflowed [True] in allocator_settings);
//   * trace entries with user_metadata (_set_memory_metadata) and compile_context, the first
//     alloc's frames carrying the FX fields of _dump_snapshot(augment_with_fx_traces=True);
//   * pinned host memory (record_pinned_host_memory=True): host_segments H1 (4 KiB, live) and H2
//     (8 KiB, cached) and host_traces, a list holding the host's one trace.
#include "Synthetic.h"

#include <cstdint>

namespace newer {

using namespace testpickle;

constexpr uint64_t MiB = 1u << 20;
constexpr uint64_t kA = 0x7f0000000000, kB = 0x7f0000400000, kC = 0x7f0002000000;
constexpr uint64_t kH1 = 0x7f5000000000, kH2 = 0x7f5000100000;
constexpr int64_t kMaxEntries = 9;

inline P fxFrames() {
    return list({dict({{"name", str("call")},
                       {"filename", str("/tmp/torchinductor_user/ab/cabcdef.py")},
                       {"line", num(57)},
                       {"fx_node_op", str("call_function")},
                       {"fx_node_name", str("addmm")},
                       {"fx_node_target", str("aten.addmm.default")},
                       {"fx_original_trace", str("  File \"model.py\", line 42, in forward\n    x = self.fc(x)\n")}}),
                 synth::frame("train_step", "train.py", 12)});
}

inline P entry(const std::string& action, uint64_t addr, uint64_t size, const std::string& metadata,
               const std::string& compile, P frames = nullptr, int64_t time = 0) {
    return dict({{"action", str(action)},
                 {"addr", unum(addr)},
                 {"size", unum(size)},
                 {"stream", num(0)},
                 {"compile_context", str(compile)},
                 {"user_metadata", str(metadata)},
                 {"frames", frames ? frames : list()},
                 {"time_us", num(1'700'000'000'000'000 + time)}});
}

inline P poolSegment(int device, uint64_t address, const std::vector<synth::BlockSpec>& blocks, int64_t owner,
                     int64_t id) {
    P seg = synth::segment(device, address, blocks);
    for (auto& [k, v] : seg->kv)
        if (k->s == "segment_pool_id") v = tuple({num(owner), num(id)});
    return seg;
}

inline P snapshot() {
    using B = synth::BlockSpec;
    const std::string na = "N/A", compiled = "Torch-Compiled Region: 0/0";
    std::vector<P> segments = {
        poolSegment(0, kA, {B{kA, MiB, 1'000'000, "active_allocated", fxFrames()}, B{kA + MiB, MiB, 0, "inactive", nullptr}}, 0, 0),
        poolSegment(0, kB, {B{kB, 20 * MiB, 20 * MiB, "active_allocated", nullptr}}, 0, 1),
        poolSegment(0, kC, {B{kC, 512 * 1024, 512 * 1024, "active_allocated", nullptr}, B{kC + 512 * 1024, 1536 * 1024, 0, "inactive", nullptr}}, 1, 0),
    };
    std::vector<P> trace = {
        entry("segment_alloc", kA, 2 * MiB, "phase=train step=1", na, nullptr, 0),
        entry("alloc", kA, 1'000'000, "phase=train step=1", na, fxFrames(), 1),
        entry("segment_alloc", kB, 20 * MiB, "phase=eval", compiled, nullptr, 2),
        entry("alloc", kB, 20 * MiB, "phase=eval", compiled, nullptr, 3),
        entry("alloc", kA + MiB, 700'000, "", na, nullptr, 4),
        entry("free_requested", kA + MiB, 700'000, "", na, nullptr, 5),
        entry("free_completed", kA + MiB, 700'000, "", na, nullptr, 6),
        // a block of C allocated before the first kept entry, freed now
        entry("free_requested", kC + 512 * 1024, 256 * 1024, "", na, nullptr, 7),
        entry("free_completed", kC + 512 * 1024, 256 * 1024, "", na, nullptr, 8),
    };
    std::vector<P> hostSegments = {
        poolSegment(-1, kH1, {B{kH1, 4096, 4096, "active_allocated", nullptr}}, 0, 0),
        poolSegment(-1, kH2, {B{kH2, 8192, 0, "inactive", nullptr}}, 0, 0),
    };
    std::vector<P> hostTrace = {
        entry("segment_alloc", kH1, 4096, "", na, nullptr, 10), entry("alloc", kH1, 4096, "", na, nullptr, 11),
        entry("segment_alloc", kH2, 8192, "", na, nullptr, 12), entry("alloc", kH2, 8192, "", na, nullptr, 13),
        entry("free_requested", kH2, 8192, "", na, nullptr, 14), entry("free_completed", kH2, 8192, "", na, nullptr, 15),
    };
    std::vector<P> roundup;
    for (int k = 1; k <= 32768; k *= 2) roundup.push_back(num(k == 2 ? 4 : 0));
    std::vector<std::pair<std::string, P>> roundupKv;
    for (int k = 1, i = 0; k <= 32768; k *= 2, ++i) roundupKv.emplace_back(std::to_string(k), roundup[static_cast<size_t>(i)]);
    return dict({{"segments", list(segments)},
                 {"device_traces", list({list(trace)})},
                 {"allocator_settings",
                  dict({{"PYTORCH_CUDA_ALLOC_CONF", str("max_split_size_mb:64,roundup_power2_divisions:[2:4]")},
                        {"max_split_size", num(64 * int64_t(MiB))},
                        {"garbage_collection_threshold", real(0.0)},
                        {"expandable_segments", boolean(false)},
                        {"pinned_num_register_threads", num(1)},
                        {"release_lock_on_cudamalloc", boolean(false)},
                        {"pinned_use_cuda_host_register", boolean(false)},
                        {"graph_capture_record_stream_reuse", boolean(false)},
                        {"roundup_power2_divisions", dict(roundupKv)},
                        {"trace_alloc_max_entries", list({num(kMaxEntries)})},
                        {"trace_alloc_overflowed", list({boolean(true)})}})},
                 {"external_annotations", list()},
                 {"host_segments", list(hostSegments)},
                 {"host_traces", list({list(hostTrace)})}});
}

} // namespace newer
