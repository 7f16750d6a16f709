#pragma once
// Retained autograd graphs as a session stores them (graph_scans rows, JSON text written by the
// Python agent or the C++ capture library; capture/python/memlens_agent/README-graphs.md), parsed
// into structs, and what the window says about them:
//
//   - groups: roots that share a referrer pattern (`validate.kept_outputs[*]`) across scans, with
//     their count and bytes in every scan, the iteration each first appeared and how the group
//     grows ("+1 graph, +6.5 KiB per eval iteration since iteration 4");
//   - folding of one graph for display: parameters with their AccumulateGrad nodes (and the
//     transposes/views on the way to them) folded into the node that uses them, and repeated
//     structure (12 identical transformer blocks) folded into one copy with a count.
//
// Plain C++, no Qt. Parsing never throws on bad JSON: the scan says what was wrong (error()).
//
// The pieces: GraphScanData.h (a scan's structs), GraphScanJson.h (reading them),
// GroupGrowth.h (growth and its sentence), GraphFolding.h (folding one graph).
#include "memlens/model/GraphFolding.h"
#include "memlens/model/GraphScanData.h"
#include "memlens/model/GraphScanJson.h"
#include "memlens/model/GroupGrowth.h"
#include "memlens/model/SessionData.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace memlens::model {

// One referrer pattern over the scans.
struct RootGroup {
    std::string pattern;
    struct Point {
        int64_t graphs = 0;
        uint64_t bytes = 0;  // sum of retained_bytes
        int64_t savedAlive = 0, savedReleased = 0, savedHooked = 0;
        bool savedListed = true;
    };
    std::vector<Point> points;    // one per scan (zero where absent)
    int64_t firstSeen = 0;        // earliest first_seen of its graphs, else the first scan's iteration
    size_t firstScan = 0;         // index of the first scan it appears in
};

class GraphScans {
public:
    GraphScans() = default;
    // iterations: the session's, for growth per phase (may be empty: the scans' phases are used).
    GraphScans(std::vector<GraphScanData> scans, std::vector<SessionIteration> iterations = {});
    static GraphScans fromStored(const std::vector<GraphScan>& stored, std::vector<SessionIteration> iterations = {});

    const std::vector<GraphScanData>& scans() const { return scans_; }
    const std::vector<SessionIteration>& iterations() const { return iterations_; }
    const std::vector<RootGroup>& groups() const { return groups_; }
    bool empty() const { return scans_.empty(); }

    // The last scan at or before iteration (scans are in iteration order); -1 when none.
    int scanAtIteration(int64_t iteration) const;
    // Groups present in scan `scan`, or present in an earlier one and gone since, ordered by
    // bytes in that scan (largest first), gone ones last.
    std::vector<size_t> groupsAt(size_t scan) const;
    // Index of the group of `pattern`; -1 if none.
    int groupIndex(const std::string& pattern) const;
    // How group g changed over scans [0, scan].
    GroupGrowth growth(size_t group, size_t scan) const;
    // The graphs of group g in scan `scan` (indices into scans()[scan].graphs).
    std::vector<size_t> graphsOf(size_t group, size_t scan) const;

    // Iterations of each phase in (from, to]; from the session's iterations when known.
    std::vector<std::pair<std::string, int64_t>> iterationsBetween(int64_t from, int64_t to, size_t scanTo) const;

private:
    void analyse();

    std::vector<GraphScanData> scans_;
    std::vector<SessionIteration> iterations_;
    std::vector<RootGroup> groups_;
};

} // namespace memlens::model
