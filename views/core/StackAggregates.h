#pragma once
// The memory the timeline does not draw one allocation at a time, summed by the stack that
// allocated it. At the overview of a long trace thousands of equal allocations are each thinner
// than a pixel, so no single band shows them; summed by call site they make bands a person can
// see ("these 170 parameter copies, allocated here"), and zooming in hands the picture back to
// single allocations.
//
// Computed for a range of entries once the view rests, like the chosen bands: the stacks whose
// allocations (other than the chosen ones) cover the most bytes x entries of it, each sampled at
// evenly spaced entries. A column reads the sample at or before its entry; outside the sampled
// range a group holds nothing.
#include "core/AllocationLifetimes.h"

#include <cstdint>
#include <span>
#include <vector>

namespace memlens::views {

class StackAggregates {
public:
    StackAggregates() = default;
    struct Options {
        size_t maxGroups = 8;         // at most this many groups, largest area first
        double minShare = 0.02;       // a stack's area: at least this share of what is not chosen
        double minOtherShare = 0.25;  // no groups unless what is not chosen covers this share of all
        size_t minAllocations = 4;    // a stack of fewer allocations is no crowd: none of its own
        size_t samples = 4096;        // evenly spaced entries of [first, last] (at least 2)
    };
    // chosen: the lifetimes drawn one by one (indices into lifetimes.all(), ascending), left out.
    // Zoomed in, the chosen allocations show nearly everything and no group is made.
    static StackAggregates compute(const AllocationLifetimes& lifetimes, std::span<const uint32_t> chosen,
                                   int64_t first, int64_t last, const Options& options);
    static StackAggregates compute(const AllocationLifetimes& lifetimes, std::span<const uint32_t> chosen,
                                   int64_t first, int64_t last) {
        return compute(lifetimes, chosen, first, last, Options{});
    }

    size_t groupCount() const { return m_stacks.size(); }
    model::StackId stack(size_t group) const { return m_stacks[group]; }
    // How many of the stack's allocations (not chosen) are live somewhere in the range.
    size_t allocationCount(size_t group) const { return m_counts[group]; }
    // The group's live bytes right after `entry`, as sampled (0 outside the sampled range).
    int64_t bytesAt(size_t group, int64_t entry) const;
    int64_t first() const { return m_first; }
    int64_t last() const { return m_last; }

private:
    // Sample s's entry: first + (last - first) * s / (samples - 1), rounded down.
    int64_t sampleEntry(size_t s) const;

    int64_t m_first = 0, m_last = -1;
    size_t m_samples = 0;
    std::vector<model::StackId> m_stacks;
    std::vector<size_t> m_counts;
    std::vector<int64_t> m_bytes;  // group g, sample s: m_bytes[g * m_samples + s]
};

} // namespace memlens::views
