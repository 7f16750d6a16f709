#pragma once
// How a group of retained graphs grows over the scans, and the sentence that says it
// ("+1 graph, +640 KiB per eval iteration since iteration 4").
#include <cstddef>
#include <cstdint>
#include <string>

namespace memlens::model {

class GraphScans;

// How a group changed over the scans up to one of them.
struct GroupGrowth {
    enum class Kind { Single, Steady, Growing, Shrinking, Gone };
    Kind kind = Kind::Single;
    double graphsPerStep = 0;  // per iteration of `phase` (all phases when phase is empty)
    double bytesPerStep = 0;
    std::string phase;         // the phase whose iterations the growth follows; "" = any
    int64_t since = 0;         // iteration the growth (or the group) started at
    int64_t goneAt = 0;        // Gone: the first scan's iteration without it
    std::string text;          // "+1 graph, +640 KiB per eval iteration since iteration 4"
};

// How group `group` of scans changed over scans [0, scan] (GraphScans::growth).
GroupGrowth fitGroupGrowth(const GraphScans& scans, size_t group, size_t scan);

// "+1 graph", "+3 graphs", "+1 graph every 2 iterations" ... (used by GroupGrowth::text)
std::string describeGrowth(const GroupGrowth& g);

} // namespace memlens::model
