#include "memlens/model/IterationDiff.h"

#include "memlens/model/AddressMap.h"

#include <algorithm>
#include <unordered_map>

namespace memlens::model {

Survivors survivorsOf(const TraceColumns& t, const std::vector<Iteration>& its, size_t from, size_t to,
                      int64_t aliveAfter) {
    Survivors out;
    out.from = from;
    out.to = to;
    out.aliveAfter = aliveAfter;
    if (its.empty() || from > to || to >= its.size()) return out;
    const int64_t rows = t.rowsAsInt32("the iteration diff");
    const int64_t firstEntry = std::max<int64_t>(its[from].firstEntry, 0);
    const int64_t lastEntry = std::min(its[to].lastEntry, rows - 1);
    // The range's allocs that survive aliveAfter as forEachAllocationLife settles them: taken over
    // by a later alloc at their address (never freed, as it has it; so is one taken over by an
    // alloc after the range, which is not followed), freed after aliveAfter, or still open at the
    // end of the read. Holds no more than the blocks live at once and the survivors.
    std::vector<int32_t> survivors;
    const int64_t end = std::min(std::max(lastEntry, aliveAfter), rows - 1);
    forEachAllocationLife(t, firstEntry, lastEntry, end, [&](AllocationLife life) {
        if (life.aliveAfter(aliveAfter)) survivors.push_back(life.alloc);
    });
    std::sort(survivors.begin(), survivors.end());
    const size_t span = to - from + 1;
    std::unordered_map<StackId, size_t> index;
    size_t k = from;
    for (const int32_t alloc : survivors) {
        while (k < to && alloc > its[k].lastEntry) ++k;
        if (alloc < its[k].firstEntry || alloc > its[k].lastEntry) continue;  // between iterations
        const StackId stack = t.stack[static_cast<size_t>(alloc)];
        auto [it, added] = index.try_emplace(stack, out.groups.size());
        if (added) {
            SurvivorGroup g;
            g.stack = stack;
            g.perIteration.assign(span, 0);
            out.groups.push_back(std::move(g));
        }
        SurvivorGroup& g = out.groups[it->second];
        const uint64_t bytes = t.size[static_cast<size_t>(alloc)];
        if (g.perIteration[k - from] == 0) {
            ++g.iterationsWith;
            if (g.count == 0) g.firstIteration = its[k].number;
            g.lastIteration = its[k].number;
        }
        g.perIteration[k - from] += bytes;
        g.bytes += bytes;
        g.count += 1;
        g.allocs.push_back(alloc);
        out.bytes += bytes;
        out.count += 1;
    }
    std::sort(out.groups.begin(), out.groups.end(), [](const SurvivorGroup& a, const SurvivorGroup& b) {
        return a.bytes != b.bytes ? a.bytes > b.bytes : a.stack < b.stack;
    });
    return out;
}

} // namespace memlens::model
