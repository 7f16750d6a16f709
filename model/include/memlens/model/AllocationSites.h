#pragma once
// Live bytes grouped by allocation stack, as heaptrack's trees: bottom-up (the allocating frame
// first, its callers below) and top-down (the outermost caller first). Either at one allocator
// state (its live blocks) or over a range of trace entries (what `alloc` entries in the range
// asked for, and how much of it is still live at the range's end).
#include "memlens/model/AllocatorState.h"
#include "memlens/model/Snapshot.h"

#include <atomic>
#include <cstdint>
#include <span>
#include <vector>

namespace memlens::model {

constexpr FrameId kNoFrame = ~FrameId(0);  // the root, and the node of allocations without a stack

struct SiteNode {
    FrameId frame = kNoFrame;
    uint32_t parent = 0;       // the root is its own parent
    uint32_t firstChild = 0;   // children are nodes[firstChild, firstChild + childCount),
    uint32_t childCount = 0;   // by bytes descending
    uint64_t bytes = 0;        // inclusive: every allocation whose stack passes through here
    uint64_t count = 0;
    uint64_t liveBytes = 0;    // of those, still live at the end of the range (state: all of them)
    uint64_t liveCount = 0;
    StackId topStack = 0;      // the stack that brings the most bytes through this node
};

struct SiteTree {
    std::vector<SiteNode> nodes;  // nodes[0] is the root: all allocations
    const SiteNode& root() const { return nodes.front(); }
    uint32_t rowOf(uint32_t node) const { return node - nodes[nodes[node].parent].firstChild; }
    size_t depthOf(uint32_t node) const;
    bool empty() const { return nodes.size() <= 1; }
};

struct SitesOptions {
    // Leave out native frames of stacks that have Python frames, so the trees start at the Python
    // line that allocated; stacks of only native frames lose just their leading frames of the
    // recording machinery and the allocator (isRecordingMachinery).
    bool skipNative = false;
    const std::atomic<bool>* cancel = nullptr;  // checked now and then; throws Cancelled
};

// What one stack allocated.
struct StackCost {
    StackId stack = 0;
    uint64_t bytes = 0;
    uint64_t count = 0;
    uint64_t liveBytes = 0;
    uint64_t liveCount = 0;
};

struct AllocationSites {
    SiteTree bottomUp;
    SiteTree topDown;
    uint64_t totalBytes = 0;
    uint64_t totalCount = 0;
    uint64_t liveBytes = 0;
    uint64_t liveCount = 0;
    uint64_t distinctStacks = 0;
};

// Live blocks of a state (allocated, and allocated before recording), by stack: requested bytes
// (the block size where the request is unknown), one count each. Sorted by stack.
std::vector<StackCost> stackCostsAt(const DeviceState& state);
// `alloc` entries in [first, last] by stack; live: not freed (free_requested or free) within it.
std::vector<StackCost> stackCostsInRange(const TraceColumns& trace, int64_t first, int64_t last,
                                         const std::atomic<bool>* cancel = nullptr);

AllocationSites buildAllocationSites(const Snapshot& snapshot, std::span<const StackCost> costs,
                                     const SitesOptions& options = {});

AllocationSites allocationSitesAt(const Snapshot& snapshot, const DeviceState& state, const SitesOptions& options = {});
AllocationSites allocationSitesInRange(const Snapshot& snapshot, const DeviceData& device, int64_t first, int64_t last,
                                       const SitesOptions& options = {});

} // namespace memlens::model
