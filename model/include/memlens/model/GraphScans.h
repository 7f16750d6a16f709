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
#include "memlens/model/SessionData.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace memlens::model {

enum class SavedState : uint8_t { Alive, Released, Hooked };
const char* savedStateName(SavedState s);

// One saved-tensor slot of a node (or an AccumulateGrad node's leaf, `variable`).
// The CUDA device of a tensor's device string: "cuda:1" -> 1, "cuda" -> 0; nullopt otherwise.
std::optional<int> cudaDeviceIndex(const std::string& device);

struct SavedTensorInfo {
    std::string name;  // "mat1", "saved_tensors[0]", "ctx.buf", "variable"
    SavedState state = SavedState::Alive;
    bool inspected = false;  // shape/dtype/device/bytes were read
    std::vector<int64_t> shape;
    std::string dtype;   // "float32"
    std::string device;  // "cuda:0", "cpu"
    uint64_t bytes = 0;  // of the whole storage (a view holds it all)
    std::optional<uint64_t> ptr;  // storage address; CUDA ones fall inside an allocator block
    bool param = false;           // a parameter (or gradient, optimizer state, buffer): not counted
    bool attribute = false;       // kept as a custom Function's ctx attribute
    bool modifiedInPlace = false;
    std::string note;             // "not inspected", the error of a modified slot, ...

    bool isCuda() const { return device.rfind("cuda", 0) == 0; }
    // "[16, 64] float32"; "" when not inspected.
    std::string shapeText() const;
};

struct GraphNodeInfo {
    std::string name;  // "AddmmBackward0", "torch::autograd::AccumulateGrad"
    std::vector<SavedTensorInfo> saved;
    std::optional<SavedTensorInfo> variable;  // AccumulateGrad's leaf
    bool param = false;                       // AccumulateGrad of a parameter
    // Shapes/dtypes of the gradients the node receives (the forward outputs), where the walker
    // gives them (the C++ library does; the Python agent does not).
    std::vector<SavedTensorInfo> outputs;

    bool isAccumulateGrad() const;
    // Unique (by storage) bytes of alive, non-parameter saved tensors.
    uint64_t savedBytes() const;
    int savedCount(SavedState s) const;
    // "AddmmBackward0"; AccumulateGrad without the namespace.
    std::string shortName() const;
};

struct StorageInfo {
    uint64_t ptr = 0;
    uint64_t bytes = 0;
    std::string device;
};

// One retained graph (one root node) of one scan.
struct RetainedGraph {
    std::string root;                    // shortest referrer path
    std::vector<std::string> referrers;  // up to 8, shortest first
    std::string pattern;                 // root with indices as [*]
    bool unreachable = false;
    int64_t nodes = 0;
    int64_t savedTensors = 0, savedAlive = 0, savedReleased = 0, savedHooked = 0, savedParameters = 0;
    // false when the walker could not list saved tensors (the C++ library: LibTorch exposes none)
    bool savedListed = true;
    uint64_t retainedBytes = 0, exclusiveBytes = 0;
    std::string device;
    std::vector<int64_t> rootShape;
    std::string rootDtype, rootDevice, rootGradFn, rootKey;
    int64_t roots = 1;
    bool backwardRan = false;
    std::string signature;
    std::optional<int64_t> firstSeen;  // iteration
    bool truncated = false;
    bool detailOmitted = false;
    std::vector<GraphNodeInfo> nodesList;
    std::vector<std::pair<uint32_t, uint32_t>> edges;  // node -> next_functions entry
    std::vector<StorageInfo> storages;

    bool hasDetail() const { return !nodesList.empty(); }
};

struct GraphScanData {
    int64_t id = 0;  // row id in the session (0: none)
    int64_t iteration = 0;
    std::string phase;
    std::string trigger;  // iteration | request | exit | ...
    int64_t timeUs = 0;
    bool partial = false;
    std::string partialReason;
    std::string hookDetection;  // memory | unavailable | "" (C++: none)
    std::string walker;         // "python" (the agent) or "libtorch" (the C++ library)
    std::string note;           // scan-level note, e.g. why saved tensors are not listed
    std::string torch;
    int64_t scanUs = 0;
    int64_t skippedBefore = 0;
    uint64_t totalRetainedBytes = 0;
    std::string error;  // the stored text was not a scan; graphs is then empty
    std::vector<RetainedGraph> graphs;  // largest first
};

// Parses one stored scan. Never throws: a bad text gives a scan with error set.
GraphScanData parseGraphScan(const GraphScan& stored);
// Parses a scan object (JSON text) given iteration/phase/time from elsewhere.
GraphScanData parseGraphScanJson(const std::string& json, int64_t iteration = 0, const std::string& phase = {},
                                 int64_t timeUs = 0);

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

// "+1 graph", "+3 graphs", "+1 graph every 2 iterations" ... (used by GroupGrowth::text)
std::string describeGrowth(const GroupGrowth& g);

// ---- Folding one graph for display ------------------------------------------------------------

struct GraphFoldOptions {
    // fold parameter AccumulateGrad nodes, with the views and copies on the way to them
    // (TBackward0, ToCopyBackward0, ...) and nodes whose saved tensors are all parameters
    bool parameters = true;
    bool repeats = true;     // fold repeated structure
    int minRepeats = 2;      // fold a run of at least this many identical blocks
    int maxPeriod = 16;      // the longest block, in dominator segments
};

struct FoldedNode {
    std::vector<uint32_t> members;  // original node indices (all copies)
    uint32_t representative = 0;    // the original node it shows (first copy)
    std::string name;               // op name
    int copies = 1;                 // > 1: one node standing for this many (repeated blocks)
    uint64_t savedBytes = 0;        // alive non-parameter saved bytes, over all copies
    int savedAlive = 0, savedReleased = 0, savedHooked = 0;  // over all copies
    // Parameters folded into this node (AccumulateGrad leaves reached only through views).
    std::vector<uint32_t> parameterNodes;  // original AccumulateGrad indices (first copy's)
    int parameters = 0;                    // count over all copies
    uint64_t parameterBytes = 0;           // over all copies (not retained: parameters live anyway)
    int repeat = -1;                       // index into FoldedGraph::repeats, -1: none
};

struct FoldedEdge {
    uint32_t from = 0, to = 0;
    int count = 1;  // edges merged into this one
};

struct FoldedRepeat {
    int count = 0;                // identical blocks folded
    std::vector<uint32_t> nodes;  // folded node indices of the copy shown
    int nodesPerBlock = 0;        // original nodes in one block
    std::string label;            // "× 12 identical blocks"
};

struct FoldedGraph {
    std::vector<FoldedNode> nodes;
    std::vector<FoldedEdge> edges;
    std::vector<FoldedRepeat> repeats;
    std::vector<int32_t> nodeOf;  // original index -> folded index (-1: none)
    size_t originalNodes = 0, originalEdges = 0;
    int foldedParameters = 0;     // AccumulateGrad nodes folded away (plus their views)
};

FoldedGraph foldGraph(const RetainedGraph& graph, const GraphFoldOptions& options = {});

} // namespace memlens::model
