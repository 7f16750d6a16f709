#include "memlens/model/OomVerdict.h"

#include "memlens/model/ByteFormat.h"

#include <algorithm>

namespace memlens::model {

const char* oomKindName(OomKind k) {
    switch (k) {
    case OomKind::OutOfMemory: return "out of memory";
    case OomKind::Fragmentation: return "fragmentation";
    case OomKind::OtherStream: return "free memory on another stream";
    case OomKind::MemoryLimit: return "memory limit";
    case OomKind::Refused: return "refused";
    }
    return "?";
}

uint64_t allocationSizeFor(uint64_t size) {
    constexpr uint64_t MiB = 1ull << 20;
    if (size <= MiB) return 2 * MiB;
    if (size < 10 * MiB) return 20 * MiB;
    return (size + 2 * MiB - 1) / (2 * MiB) * (2 * MiB);
}

OomVerdict judgeOom(const DeviceState& st, uint64_t asked, std::optional<uint64_t> deviceFree, uint64_t stream) {
    constexpr uint64_t MiB = 1ull << 20;
    OomVerdict v;
    v.entry = st.at + 1;
    v.asked = asked;
    v.newSegmentSize = allocationSizeFor(asked);
    v.deviceFree = deviceFree;
    v.stream = stream;
    v.smallPool = asked <= MiB;
    v.reservedBytes = st.reservedBytes;
    for (const StateSegment& seg : st.segments) {
        v.expandable = v.expandable || seg.isExpandable;
        const bool usable = seg.stream == stream && seg.isLarge != v.smallPool;
        for (const StateBlock& b : seg.blocks) {
            if (b.kind == StateBlockKind::Free) {
                v.cacheFree += b.size;
                v.largestFree = std::max(v.largestFree, b.size);
                if (usable) {
                    v.usableFree += b.size;
                    v.largestUsable = std::max(v.largestUsable, b.size);
                }
            } else if (b.kind != StateBlockKind::PendingFree) {
                v.liveBytes += b.requestedSize == 0 ? b.size : std::min(b.requestedSize, b.size);
            }
        }
    }

    const std::string a = formatBytes(asked);
    const uint64_t dev = deviceFree.value_or(0);
    if (deviceFree && dev >= v.newSegmentSize) {
        v.kind = OomKind::MemoryLimit;
        v.sentence = "memory limit: " + a + " asked and " + formatBytes(dev) +
                     " free on the device, but a per-process memory fraction refused a new " +
                     formatBytes(v.newSegmentSize) + " segment";
        v.advice = "Raise or remove torch.cuda.set_per_process_memory_fraction (or per_process_memory_fraction in "
                   "PYTORCH_CUDA_ALLOC_CONF).";
    } else if (v.largestUsable >= asked) {
        v.kind = OomKind::Refused;
        v.sentence = "refused: " + a + " asked and a " + formatBytes(v.largestUsable) +
                     " free block is cached for the same stream, but the allocator would not use it";
        v.advice = "With max_split_size_mb set, free blocks at or above that size serve only large requests; the "
                   "state shown here may also be estimated from the trace.";
    } else if (v.largestFree >= asked) {
        v.kind = OomKind::OtherStream;
        v.sentence = "free memory on another stream: a " + formatBytes(v.largestFree) +
                     " free block is cached for another stream or pool, " + a + " asked, largest usable block " +
                     formatBytes(v.largestUsable);
        v.advice = "Each stream and each private pool (CUDA graphs, MemPool) keeps its own cache: free blocks of one "
                   "cannot serve another.";
    } else if (v.cacheFree + dev >= asked) {
        v.kind = OomKind::Fragmentation;
        v.sentence = "fragmentation: " + formatBytes(v.cacheFree + dev) + " free in total";
        if (deviceFree && dev > 0)
            v.sentence += " (" + formatBytes(v.cacheFree) + " cached, " + formatBytes(dev) + " on the device)";
        v.sentence += ", largest free block " + formatBytes(v.largestFree) + ", " + a + " asked";
        v.advice = v.expandable
                       ? "Even with expandable segments the free memory is in pieces; freeing long-lived tensors "
                         "sooner, or allocating the big buffers first, helps."
                       : "Enough memory is free, but not in one piece; PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True "
                         "usually avoids this.";
    } else {
        v.kind = OomKind::OutOfMemory;
        v.sentence = "out of memory: " + a + " asked, only " + formatBytes(v.cacheFree) +
                     " free in the allocator's cache";
        v.sentence += deviceFree ? " and " + formatBytes(dev) + " free on the device"
                                 : "; the device's free memory was not recorded";
        v.advice = "Live tensors hold " + formatBytes(v.liveBytes) + " of the " + formatBytes(v.reservedBytes) +
                   " reserved: this step needs less memory (a smaller batch, activation checkpointing, or "
                   "freeing tensors sooner).";
    }
    return v;
}

namespace {
bool isOomEntry(const TraceColumns& t, int64_t entry) {
    return entry >= 0 && static_cast<size_t>(entry) < t.rows() && t.action[entry] == Action::Oom;
}
} // namespace

std::optional<OomVerdict> oomVerdictAt(const DeviceData& device, const StateHistory& history, int64_t entry) {
    if (!isOomEntry(device.trace, entry)) return std::nullopt;
    return oomVerdictAt(device, history.stateAfter(entry - 1), entry);
}

std::optional<OomVerdict> oomVerdictAt(const DeviceData& device, const DeviceState& before, int64_t entry) {
    const TraceColumns& t = device.trace;
    if (!isOomEntry(t, entry)) return std::nullopt;
    std::optional<uint64_t> deviceFree;
    if (t.flags[entry] & TraceColumns::HasDeviceFree) deviceFree = t.addr[entry];
    OomVerdict v = judgeOom(before, t.size[entry], deviceFree, t.stream[entry]);
    v.entry = entry;
    return v;
}

} // namespace memlens::model
