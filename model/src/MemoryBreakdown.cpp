#include "memlens/model/MemoryBreakdown.h"

#include "memlens/model/ByteFormat.h"

#include <algorithm>
#include <map>

namespace memlens::model {

const char* breakdownPartLabel(BreakdownPart p) {
    switch (p) {
    case BreakdownPart::LiveTensors: return "Live tensors";
    case BreakdownPart::Rounding: return "Rounding";
    case BreakdownPart::PendingFree: return "Pending frees";
    case BreakdownPart::FragmentedFree: return "Free in used segments";
    case BreakdownPart::ReleasableFree: return "Free segments";
    case BreakdownPart::CudaContext: return "CUDA context";
    case BreakdownPart::OutsidePyTorch: return "Outside PyTorch";
    case BreakdownPart::Unexplained: return "Unexplained";
    }
    return "?";
}

const char* breakdownPartExplanation(BreakdownPart p) {
    switch (p) {
    case BreakdownPart::LiveTensors:
        return "What the program's live tensors asked for: the requested sizes of allocated blocks.";
    case BreakdownPart::Rounding:
        return "Allocated blocks are bigger than asked: sizes round up to 512 bytes, and a block keeps a "
               "remainder too small to split off (up to 1 MiB in the large pool).";
    case BreakdownPart::PendingFree:
        return "Freed by the program but still in use on another stream (record_stream); they return to the "
               "cache once that stream's work completes.";
    case BreakdownPart::FragmentedFree:
        return "Free blocks inside segments that still hold live blocks: empty_cache() cannot return them, and "
               "they serve only requests that fit (fragmentation).";
    case BreakdownPart::ReleasableFree:
        return "Segments with nothing live in them (and whole free pages of expandable segments): "
               "empty_cache() would return them to the device.";
    case BreakdownPart::CudaContext:
        return "The CUDA context, kernel images and runtime heaps, created with the first CUDA call and never "
               "seen by PyTorch's allocator.";
    case BreakdownPart::OutsidePyTorch:
        return "Memory that NCCL, cuBLAS/cuDNN handles and other libraries take from the driver directly, "
               "outside PyTorch's allocator.";
    case BreakdownPart::Unexplained:
        return "The rest of what the driver reports for the process, not accounted for by the figures above.";
    }
    return "";
}

uint64_t MemoryBreakdown::bytes(BreakdownPart p) const {
    for (const auto& i : parts)
        if (i.part == p) return i.bytes;
    return 0;
}

uint64_t expandablePageSize(bool largePool) { return largePool ? (20ull << 20) : (2ull << 20); }

namespace {

// Bytes of whole pages lying entirely inside [offset, offset + size) of an expandable segment.
uint64_t wholePagesInside(uint64_t offset, uint64_t size, uint64_t page) {
    uint64_t first = (offset + page - 1) / page;
    uint64_t last = (offset + size) / page;
    return last > first ? (last - first) * page : 0;
}

BreakdownItem item(BreakdownPart p, uint64_t bytes) {
    return BreakdownItem{p, bytes, breakdownPartLabel(p), breakdownPartExplanation(p)};
}

} // namespace

std::vector<MemoryBreakdown::PoolShare> privatePoolShares(const DeviceState& st) {
    std::map<PoolId, MemoryBreakdown::PoolShare> pools;
    for (const StateSegment& seg : st.segments) {
        if (seg.pool.isDefault()) continue;
        MemoryBreakdown::PoolShare& p = pools[seg.pool];
        p.pool = seg.pool;
        p.reservedBytes += seg.totalSize;
        for (const StateBlock& b : seg.blocks) {
            if (b.kind == StateBlockKind::Free) {
                p.freeBytes += b.size;
                continue;
            }
            p.allocatedBytes += b.size;
            if (b.kind != StateBlockKind::PendingFree)
                p.liveBytes += b.requestedSize == 0 ? b.size : std::min(b.requestedSize, b.size);
        }
    }
    std::vector<MemoryBreakdown::PoolShare> out;
    for (auto& [id, p] : pools) out.push_back(p);
    return out;
}

MemoryBreakdown computeBreakdown(const DeviceState& st, const std::optional<ProcessFigures>& process) {
    uint64_t live = 0, rounding = 0, pending = 0, fragmented = 0, releasable = 0, reserved = 0;
    for (const StateSegment& seg : st.segments) {
        // blocks cover the segment; a gap or overhang in a damaged state is counted as free or cut
        uint64_t covered = 0;
        bool used = false;
        for (const StateBlock& b : seg.blocks) {
            used = used || b.kind != StateBlockKind::Free;
            covered += b.size;
        }
        uint64_t segFree = 0, segReleasable = 0;
        const uint64_t page = expandablePageSize(seg.isLarge);
        for (const StateBlock& b : seg.blocks) {
            switch (b.kind) {
            case StateBlockKind::Allocated:
            case StateBlockKind::BeforeRecording: {
                // an unknown request (0) counts the whole block as live
                uint64_t req = b.requestedSize == 0 ? b.size : std::min(b.requestedSize, b.size);
                live += req;
                rounding += b.size - req;
                break;
            }
            case StateBlockKind::PendingFree: pending += b.size; break;
            case StateBlockKind::Free:
                segFree += b.size;
                if (used && seg.isExpandable) segReleasable += wholePagesInside(b.address - seg.address, b.size, page);
                break;
            }
        }
        if (covered < seg.totalSize) segFree += seg.totalSize - covered;
        uint64_t segBytes = std::max(covered, seg.totalSize);
        if (!used) {
            releasable += segFree;
        } else {
            releasable += segReleasable;
            fragmented += segFree - segReleasable;
        }
        reserved += segBytes;
    }

    MemoryBreakdown out;
    out.parts = {item(BreakdownPart::LiveTensors, live), item(BreakdownPart::Rounding, rounding),
                 item(BreakdownPart::PendingFree, pending), item(BreakdownPart::FragmentedFree, fragmented),
                 item(BreakdownPart::ReleasableFree, releasable)};
    out.reservedBytes = reserved;
    out.totalBytes = reserved;
    out.privatePools = privatePoolShares(st);
    if (!process) return out;

    const ProcessFigures& pf = *process;
    out.hasProcessFigures = pf.processTotal || pf.cudaContext || pf.outsidePyTorch;
    uint64_t context = pf.cudaContext.value_or(0);
    uint64_t outside = pf.outsidePyTorch.value_or(0);
    uint64_t unexplained = 0;
    bool outsideDerived = false;
    if (pf.processTotal && *pf.processTotal < reserved) {
        out.note = "The process total (" + formatBytes(*pf.processTotal) + ") is below what the allocator reserved (" +
                   formatBytes(reserved) + "): the figures were not taken at the same moment.";
    } else if (pf.processTotal) {
        const uint64_t beyond = *pf.processTotal - reserved;
        if (!pf.outsidePyTorch) {
            // everything beyond the allocator and the context is outside PyTorch
            if (context > beyond)
                out.note = "The CUDA context figure is more than the process holds beyond the allocator (" +
                           formatBytes(beyond) + "): the figures were not taken at the same moment.";
            context = std::min(context, beyond);
            outside = beyond - context;
            outsideDerived = true;
        } else if (context + outside > beyond) {
            out.note = "The context and outside figures add up to more than the process holds beyond the allocator (" +
                       formatBytes(beyond) + "): they were not taken at the same moment.";
        } else {
            unexplained = beyond - context - outside;
        }
    }
    if (pf.cudaContext) out.parts.push_back(item(BreakdownPart::CudaContext, context));
    if (pf.outsidePyTorch || (outsideDerived && outside > 0)) {
        BreakdownItem it = item(BreakdownPart::OutsidePyTorch, outside);
        if (outsideDerived && !pf.cudaContext) {
            it.label = "Context and other libraries";
            it.explanation = "Everything the process holds beyond PyTorch's allocator: the CUDA context (typically "
                             "300\u2013600 MiB), NCCL buffers, cuBLAS/cuDNN handles and other libraries.";
        }
        out.parts.push_back(std::move(it));
    }
    if (unexplained > 0) out.parts.push_back(item(BreakdownPart::Unexplained, unexplained));
    uint64_t sum = 0;
    for (const auto& i : out.parts) sum += i.bytes;
    out.totalBytes = sum;
    return out;
}

} // namespace memlens::model
