#pragma once
// One retained-graph scan as memlens reads it (GraphScanJson.h parses it from a session's
// graph_scans rows): its graphs, their nodes, saved tensors and storages.
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace memlens::model {

enum class SavedState : uint8_t { Alive, Released, Hooked };
const char* savedStateName(SavedState s);

// The CUDA device of a tensor's device string: "cuda:1" -> 1, "cuda" -> 0; nullopt otherwise.
std::optional<int> cudaDeviceIndex(const std::string& device);

// One saved-tensor slot of a node (or an AccumulateGrad node's leaf, `variable`).
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

} // namespace memlens::model
