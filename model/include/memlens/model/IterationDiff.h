#pragma once
// The iteration diff: allocations made in a range of iterations that are still alive at a later
// moment, grouped by allocation stack. Memory that a training loop should have given back by then
// and did not: the evidence of every leak.
#include "memlens/model/AddressMap.h"
#include "memlens/model/Iterations.h"
#include "memlens/model/Snapshot.h"

#include <cstdint>
#include <utility>
#include <vector>

namespace memlens::model {

// One `alloc` entry of a trace and the entry that freed it (free_requested, or an old trace's
// free); free == -1: still allocated when the trace ends. An alloc at an address whose block is
// still open takes the address over: the earlier block is never freed as far as the trace says.
struct AllocationLife {
    int32_t alloc = 0;
    int32_t free = -1;
    bool aliveAfter(int64_t entry) const { return free < 0 || free > entry; }
};
// Calls f(AllocationLife) once for each `alloc` entry of the trace, in the order they are settled
// (freed, taken over, or open at the end), not in trace order: one pass holding only the blocks
// open at once, so that nothing of the size of the trace is kept. Throws std::length_error for a
// trace of more than 2^31 - 1 entries.
template <class F>
void forEachAllocationLife(const TraceColumns& trace, F&& f);
// The same over entries [first, last] only, opening lives at allocs up to lastOpening (<= last):
// a life is settled by the entries read (free < 0: taken over, or still open after `last`).
template <class F>
void forEachAllocationLife(const TraceColumns& trace, int64_t first, int64_t lastOpening, int64_t last, F&& f);

struct SurvivorGroup {
    StackId stack = 0;
    uint64_t bytes = 0;
    uint64_t count = 0;
    int64_t firstIteration = 0;     // number of the first iteration that left a survivor
    int64_t lastIteration = 0;
    uint32_t iterationsWith = 0;    // iterations that left at least one
    std::vector<uint64_t> perIteration;  // bytes left by each iteration of the range, in order
    std::vector<int32_t> allocs;         // the survivors' alloc entries, in trace order
    double bytesPerIteration() const {
        return perIteration.empty() ? 0.0 : static_cast<double>(bytes) / static_cast<double>(perIteration.size());
    }
};

struct Survivors {
    size_t from = 0, to = 0;   // iteration indices (into the split), inclusive
    int64_t aliveAfter = -1;   // survivors: still allocated right after this entry
    uint64_t bytes = 0;
    uint64_t count = 0;
    std::vector<SurvivorGroup> groups;  // by bytes, largest first
};

// Allocations made in iterations [from, to] that are still allocated right after entry
// `aliveAfter`, grouped by stack (bytes: what the alloc entries asked for), paired with their
// frees as forEachAllocationLife pairs them. Keeps nothing between calls: one pass over the entries from
// the range's first to the later of its last and aliveAfter, with a map of the range's allocations
// still open (at most the blocks live at once).
Survivors survivorsOf(const TraceColumns& trace, const std::vector<Iteration>& iterations, size_t from, size_t to,
                      int64_t aliveAfter);

template <class F>
void forEachAllocationLife(const TraceColumns& t, int64_t first, int64_t lastOpening, int64_t last, F&& f) {
    AddressMap<int32_t> open;  // address -> its open alloc entry
    for (int64_t i = first; i <= last; ++i) {
        const Action a = t.action[static_cast<size_t>(i)];
        if (a != Action::Alloc && a != Action::FreeRequested && a != Action::Free) continue;
        const uint64_t addr = t.addr[static_cast<size_t>(i)];
        if (const int32_t* at = open.find(addr)) {
            f(AllocationLife{*at, a == Action::Alloc ? -1 : static_cast<int32_t>(i)});
            open.erase(addr);
        }
        if (a == Action::Alloc && i <= lastOpening) open[addr] = static_cast<int32_t>(i);
    }
    open.forEach([&](uint64_t, int32_t alloc) { f(AllocationLife{alloc, -1}); });
}

template <class F>
void forEachAllocationLife(const TraceColumns& t, F&& f) {
    const int32_t n = t.rowsAsInt32("the allocation lives");
    forEachAllocationLife(t, 0, n - 1, n - 1, std::forward<F>(f));
}

} // namespace memlens::model
