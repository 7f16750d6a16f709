#include "memlens/model/SettingsDescription.h"

#include "memlens/model/ByteFormat.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>

namespace memlens::model {

namespace {

std::string lower(std::string s) {
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return s;
}

bool truthy(const std::string& v) {
    const std::string l = lower(v);
    return l == "true" || l == "1";
}

std::string meaningOf(const std::string& key, const std::string& value) {
    if (key == "PYTORCH_CUDA_ALLOC_CONF")
        return value.empty() ? "The configuration string the process ran with: empty, so every setting has its default."
                             : "The configuration string the process ran with; the keys below are what it set.";
    if (key == "max_split_size") {
        const long long v = std::atoll(value.c_str());
        if (v < 0 || value.empty()) return "Unlimited (the default): cached blocks of any size may be split for smaller requests.";
        return "Cached blocks larger than " + formatBytes(static_cast<uint64_t>(v)) +
               " are never split (max_split_size_mb): large free blocks stay whole for large requests.";
    }
    if (key == "garbage_collection_threshold") {
        if (std::atof(value.c_str()) <= 0) return "Off (the default): cached blocks are freed only when a cudaMalloc fails.";
        return "When reserved memory passes this fraction of the allowed memory, the allocator frees old cached blocks "
               "before it asks the driver for more.";
    }
    if (key == "expandable_segments")
        return truthy(value) ? "On: a segment grows by mapping more pages at its end (cuMemMap), so free space fragments much less."
                             : "Off (the default): each segment is one cudaMalloc of a fixed size, which can leave unusable gaps.";
    if (key == "roundup_power2_divisions") {
        // the dict's keys are powers of two, so look at its values only: "{1: 0, 2: 4, ...}"
        bool any = false;
        for (size_t i = 0; i < value.size(); ++i)
            if (value[i] == ':' && i + 2 < value.size() && value[i + 2] >= '1' && value[i + 2] <= '9') any = true;
        return any ? "Request sizes are rounded up to one of N steps between powers of two (per size range), which lets "
                     "blocks be reused for nearby sizes at the cost of rounding waste."
                   : "Off (the default): requests are rounded up to a multiple of 512 bytes only.";
    }
    if (key == "release_lock_on_cudamalloc")
        return "Whether the allocator releases its lock while in cudaMalloc, so other threads can allocate meanwhile.";
    if (key == "pinned_num_register_threads")
        return "Threads the pinned host allocator uses to register memory with cudaHostRegister.";
    if (key == "pinned_use_cuda_host_register")
        return "Pinned host memory is malloc'ed and registered with cudaHostRegister instead of cudaHostAlloc.";
    if (key == "graph_capture_record_stream_reuse")
        return "During CUDA graph capture, blocks used on another stream (record_stream) may be reused once the "
               "capture shows it safe.";
    if (key == "trace_alloc_max_entries")
        return "The size of the trace ring buffer (_record_memory_history(max_entries=...)).";
    if (key == "trace_alloc_overflowed")
        return "Whether the trace ring buffer overflowed: if so, the trace starts mid-run.";
    return {};
}

} // namespace

std::vector<SettingLine> describeSettings(const Snapshot& snapshot, int device) {
    std::vector<SettingLine> out;
    for (const auto& [key, value] : snapshot.allocatorSettings) {
        if (key == "trace_alloc_max_entries" || key == "trace_alloc_overflowed") continue;  // per device, below
        out.push_back({key, value, meaningOf(key, value)});
    }
    if (const DeviceData* dd = snapshot.device(device)) {
        if (dd->traceMaxEntries)
            out.push_back({"trace_alloc_max_entries", std::to_string(*dd->traceMaxEntries),
                           "The trace ring buffer of " + deviceName(device) + " keeps at most this many entries "
                           "(_record_memory_history(max_entries=...)); it has " + std::to_string(dd->trace.rows()) + "."});
        if (dd->traceOverflowed)
            out.push_back({"trace_alloc_overflowed", *dd->traceOverflowed ? "True" : "False",
                           *dd->traceOverflowed
                               ? "The ring buffer overflowed: the trace starts mid-run, the entries before its first were "
                                 "dropped, and blocks allocated before it have no alloc entry."
                               : "The ring buffer did not overflow: the trace holds every entry since recording began."});
    }
    return out;
}

} // namespace memlens::model
