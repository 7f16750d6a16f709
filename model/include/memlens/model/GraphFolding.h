#pragma once
// Folding one retained graph for display: parameters with their AccumulateGrad nodes (and the
// transposes/views on the way to them) folded into the node that uses them, and repeated
// structure (12 identical transformer blocks) folded into one copy with a count.
#include "memlens/model/GraphScanData.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace memlens::model {

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
