#pragma once
// The stacked bands of the Active Memory Timeline, per pixel column: at the column's chosen entry,
// the bytes not drawn individually ("other") at the bottom, then each live allocation of the
// chosen set on top of each other in allocation order, so that the stack reaches live bytes.
// With stack groups (StackAggregates), "other" begins with each group's bytes, bottom up.
#include "core/AllocationLifetimes.h"
#include "core/StackAggregates.h"

#include <cstdint>
#include <span>
#include <vector>

namespace memlens::views {

struct BandSegment {
    uint32_t lifetime = 0;  // index into AllocationLifetimes::all()
    int64_t bottom = 0;
    int64_t top = 0;
};

class TimelineBands {
public:
    static constexpr int64_t kNoEntry = INT64_MIN;  // a column with nothing to draw

    TimelineBands() = default;
    // chosen: indices into lifetimes.all(), ascending. entries: per column the entry whose state is
    // drawn (kNoEntry to skip; otherwise non-decreasing); live: per column live bytes at that entry.
    // groups: the stacks whose other allocations are summed (may be null); a group never holds
    // more than what "other" has left in a column.
    TimelineBands(const AllocationLifetimes& lifetimes, std::span<const uint32_t> chosen,
                  std::span<const int64_t> entries, std::span<const int64_t> live,
                  const StackAggregates* groups = nullptr);

    int width() const { return static_cast<int>(m_other.size()); }
    int64_t entry(int column) const { return m_entries[static_cast<size_t>(column)]; }
    // Bytes of the "other" band [0, other) of a column.
    int64_t other(int column) const { return m_other[static_cast<size_t>(column)]; }
    // Live chosen lifetimes of a column, bottom to top.
    std::span<const uint32_t> lifetimes(int column) const;
    std::vector<BandSegment> segments(int column) const;
    // The stack groups inside "other" (bottom up) and their bytes in a column.
    size_t groupCount() const { return m_groupStacks.size(); }
    model::StackId groupStack(size_t group) const { return m_groupStacks[group]; }
    size_t groupAllocations(size_t group) const { return m_groupCounts[group]; }
    int64_t groupBytes(int column, size_t group) const {
        return m_groupBytes[static_cast<size_t>(column) * m_groupStacks.size() + group];
    }
    // What lies at height `bytes` in a column: a lifetime index, a group (groupHit), kOther, or
    // kNothing.
    static constexpr int64_t kOther = -1;
    static constexpr int64_t kNothing = -2;
    static constexpr int64_t groupHit(size_t group) { return -3 - static_cast<int64_t>(group); }
    static constexpr bool isGroupHit(int64_t hit) { return hit <= -3; }
    static constexpr size_t groupOfHit(int64_t hit) { return static_cast<size_t>(-3 - hit); }
    int64_t hit(int column, int64_t bytes) const;

private:
    const AllocationLifetimes* m_lifetimes = nullptr;
    std::vector<int64_t> m_entries;
    std::vector<int64_t> m_other;
    std::vector<uint32_t> m_offsets;  // column c: m_ids[m_offsets[c] .. m_offsets[c+1])
    std::vector<uint32_t> m_ids;
    std::vector<model::StackId> m_groupStacks;
    std::vector<size_t> m_groupCounts;
    std::vector<int64_t> m_groupBytes;  // column c, group g: [c * groups + g]
};

} // namespace memlens::views
