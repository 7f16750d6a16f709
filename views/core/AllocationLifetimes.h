#pragma once
// Every allocation of a device's trace as a lifetime: its alloc paired with its free_completed by
// address, as PyTorch's Active Memory Timeline pairs them; and, given the device's final blocks,
// the blocks the trace never mentions (allocated before recording, never freed), which live
// throughout.
#include "memlens/model/Snapshot.h"
#include "core/EntryAxis.h"

#include <cstdint>
#include <vector>

namespace memlens::views {

struct AllocationLifetime {
    // Live in the states right after entries [begin, end). Entry indices take 32 bits (a trace of
    // more than 2^31 - 1 entries, some 400 GB of pickle, is refused by compute()). 8 bytes a
    // lifetime (a 600 MB trace has 1.4 to 2.4 million): its size, stack and address are its alloc
    // entry's in the trace (AllocationLifetimes::bytes, stack, address), or kept aside for the
    // few allocated before recording.
    int32_t begin = -1;  // the alloc entry; -1: allocated before recording (the free is all we saw)
    int32_t end = 0;     // the free_completed (or free) entry; the entry count if still live at the end

    bool allocatedBeforeRecording() const { return begin < 0; }
    bool liveAt(int64_t entry) const { return begin <= entry && entry < end; }
};
static_assert(sizeof(AllocationLifetime) == 8);

class AllocationLifetimes {
public:
    AllocationLifetimes() = default;
    // Both throw std::length_error for a trace of more than 2^31 - 1 entries. The trace (the
    // device's) must outlive the lifetimes: their sizes and stacks are read from it.
    static AllocationLifetimes compute(const model::TraceColumns& trace);
    // The trace's lifetimes plus one for each active block of the final state that no lifetime
    // live at the end accounts for (same address).
    static AllocationLifetimes compute(const model::DeviceData& device);

    // Sorted by begin: allocations from before the recording first (in the order of their frees).
    const std::vector<AllocationLifetime>& all() const { return m_all; }
    size_t size() const { return m_all.size(); }
    const AllocationLifetime& operator[](size_t i) const { return m_all[i]; }
    // Lifetime i's requested bytes: its alloc's size.
    uint64_t bytes(size_t i) const {
        return i < m_before.size() ? m_before[i].bytes : m_trace->size[static_cast<size_t>(m_all[i].begin)];
    }
    // Lifetime i's stack: its alloc's, or (allocated before recording) its free's or its block's.
    model::StackId stack(size_t i) const {
        return i < m_before.size() ? m_before[i].stack : m_trace->stack[static_cast<size_t>(m_all[i].begin)];
    }
    // Lifetime i's address: its alloc's, or its free's, or (allocated before recording and live
    // at the end: a free_requested was all the trace saw, or a block of the final state) kept
    // aside. trace: the one it was computed from.
    uint64_t address(size_t i, const model::TraceColumns& trace) const;
    // Indices into all() of the n largest lifetimes (ties: the earlier), in ascending index order;
    // a linear selection over all of them, for each call.
    std::vector<uint32_t> largest(size_t n) const;
    // Indices into all() of the n lifetimes that cover the most area of the timeline between x0
    // and x1 on AXIS (bytes x the part of their span inside it: what a person can see there),
    // in ascending index order; ties: the earlier. Lifetimes with nothing inside are never chosen.
    // At the full range of a long trace the largest allocations are often too short to see; these
    // are the ones that show, and zooming in makes others count. maxCover bounds the drawing: the
    // chosen bands' widths, in views (a band across the whole range counts 1, across a tenth of it
    // 0.1), add up to at most maxCover (the first is always taken), so that thousands of bands
    // that each span the range (none of them visible) do not cost thousands of strokes per pixel
    // column. Linear in size().
    std::vector<uint32_t> mostVisible(size_t n, const EntryAxis& axis, double x0, double x1,
                                      double maxCover = 1e300) const;
    size_t memoryBytes() const;

private:
    // What the trace does not say of a lifetime allocated before recording.
    struct Before {
        uint64_t bytes = 0;
        model::StackId stack = 0;
    };
    // pair(): the lifetimes with an alloc into m_all (in the order of their allocs), those without
    // one (the free is all we saw) into before, with what the trace does not say of them in
    // m_before (in the order of their frees). m_all is reserved for the allocs plus reserveBefore
    // more, so that finish() can put before in front without a second array.
    // Addresses kept aside, by where a lifetime is until finish() (kBefore | index into before,
    // or index into m_all): those no entry names.
    using Aside = std::vector<std::pair<size_t, uint64_t>>;
    static constexpr size_t kBefore = size_t(1) << 63;
    // Pairs the trace's allocs and frees (see above); openAtEnd: (address, where) of each lifetime
    // still live at the end.
    void pair(const model::TraceColumns& trace, size_t reserveBefore, std::vector<AllocationLifetime>& before,
              Aside& openAtEnd);
    void finish(std::vector<AllocationLifetime>& before, Aside& addresses);
    // the value kept aside for lifetime i (m_addresses: sorted by index)
    static uint64_t aside(const std::vector<std::pair<uint32_t, uint64_t>>& v, size_t i);

    const model::TraceColumns* m_trace = nullptr;
    std::vector<AllocationLifetime> m_all;
    std::vector<Before> m_before;  // of m_all's first m_before.size(), those allocated before recording
    std::vector<std::pair<uint32_t, uint64_t>> m_addresses;
};

} // namespace memlens::views
