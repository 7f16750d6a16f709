#pragma once
// Where the reserved bytes of a device go at one moment, part by part, each with a one-sentence
// explanation; with process figures (from a captured session) the parts go on up to what
// nvidia-smi reports for the process.
#include "memlens/model/AllocatorState.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace memlens::model {

enum class BreakdownPart : uint8_t {
    LiveTensors,         // requested bytes of live blocks
    Rounding,            // block size minus requested size of live blocks
    PendingFree,         // freed blocks still waiting on other streams
    FragmentedFree,      // free blocks in segments that still hold live blocks
    ReleasableFree,      // wholly free segments, and whole free pages of expandable segments
    CudaContext,         // process figure: CUDA context, module images, runtime heaps
    OutsidePyTorch,      // process figure: NCCL, cuBLAS handles, other libraries
    Unexplained,         // process figure: the rest up to the process total
};
constexpr int kBreakdownPartCount = static_cast<int>(BreakdownPart::Unexplained) + 1;
const char* breakdownPartLabel(BreakdownPart p);
const char* breakdownPartExplanation(BreakdownPart p);

// What a captured session measured of the process at (about) the same moment. Each figure is
// optional; processTotal is NVML's usedGpuMemory, the number nvidia-smi shows.
struct ProcessFigures {
    std::optional<uint64_t> processTotal;
    std::optional<uint64_t> cudaContext;
    std::optional<uint64_t> outsidePyTorch;
};

struct BreakdownItem {
    BreakdownPart part = BreakdownPart::LiveTensors;
    uint64_t bytes = 0;
    std::string label;
    std::string explanation;
};

struct MemoryBreakdown {
    // The five allocator parts always, in the order of BreakdownPart, summing to reservedBytes;
    // then the process parts that are known.
    std::vector<BreakdownItem> parts;
    uint64_t reservedBytes = 0;
    uint64_t totalBytes = 0;          // sum of all parts: the process total when it is known
    bool hasProcessFigures = false;
    // Set when the figures do not fit together (e.g. a process total below reserved).
    std::string note;
    // Each private pool (CUDA graphs, MemPool) apart, sorted by pool; its bytes are inside the parts
    // above. A private pool's free blocks serve only that pool, and empty_cache() does not release
    // them while the pool is alive.
    struct PoolShare {
        PoolId pool;
        uint64_t reservedBytes = 0;
        uint64_t liveBytes = 0;       // requested bytes of its live blocks, as LiveTensors counts them
        uint64_t allocatedBytes = 0;  // sizes of its blocks in use (pending frees too), as DeviceState's
        uint64_t freeBytes = 0;       // its cached free blocks
    };
    std::vector<PoolShare> privatePools;

    uint64_t bytes(BreakdownPart p) const;
};

// Page size PyTorch maps expandable segments in: 2 MiB for the small pool, 20 MiB for the large.
uint64_t expandablePageSize(bool largePool);

MemoryBreakdown computeBreakdown(const DeviceState& state, const std::optional<ProcessFigures>& process = std::nullopt);

// The private pools of a state (MemoryBreakdown::privatePools), sorted by pool.
std::vector<MemoryBreakdown::PoolShare> privatePoolShares(const DeviceState& state);

} // namespace memlens::model
