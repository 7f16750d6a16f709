#pragma once
// What the doctor says: findings (a named mistake, what it costs, its evidence and the fix) and
// a summary that answers the two usual misdiagnoses (nvidia-smi, the batch size).
#include "memlens/model/Iterations.h"
#include "memlens/model/MemoryCategory.h"
#include "memlens/model/Snapshot.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace memlens::model {

enum class Severity : uint8_t { Info, Warning, Error };
const char* severityName(Severity s);
std::optional<Severity> severityFromName(std::string_view name);

// The rules, by their stable ids.
namespace rule {
inline constexpr const char* kGraphKept = "graph-kept";
inline constexpr const char* kEvalWithGrad = "eval-with-grad";
inline constexpr const char* kKeptOnDevice = "kept-on-device";
inline constexpr const char* kPreviousBatch = "previous-batch";
inline constexpr const char* kGradsKept = "grads-kept";
inline constexpr const char* kVariableLength = "variable-length";
inline constexpr const char* kFragmentation = "fragmentation";
inline constexpr const char* kGrowth = "growth";
} // namespace rule

struct FindingFrame {
    std::string name;
    std::string filename;
    uint64_t line = 0;
};

struct Finding {
    std::string rule;
    Severity severity = Severity::Info;
    std::string title;       // one line
    std::string device;      // "cuda:0", "cpu"
    uint64_t bytes = 0;      // what it costs at the peak, or holds now
    std::optional<double> perIterationBytes;  // for growth
    std::optional<int64_t> sinceIteration;
    uint64_t count = 0;      // tensors, graphs or allocations
    std::vector<std::string> references;  // variable paths, e.g. __main__.val_losses[*]
    std::vector<FindingFrame> frames;     // the allocation stack, innermost first
    std::string evidence;    // one or two sentences with figures
    std::string fix;         // code
    bool expandableAlready = false;  // fragmentation, variable-length: expandable segments were on already
    bool estimated = false;  // read from stacks, not recorded by the agent

    // Where the evidence is, for the window (not printed).
    int deviceIndex = -1;                // snapshot device, -1: none
    std::vector<StackId> stacks;         // the allocation stacks involved (snapshot ids)
    std::vector<int64_t> allocEntries;   // trace entries of the evidence allocations (at most 10000)
    std::vector<int64_t> iterations;     // iteration numbers involved
    std::string graphPattern;            // the graph-scan group (sessions)
    int64_t oomEntry = -1;
};

struct DoctorSummary {
    std::string nvidiaSmi;  // the gap between what the process holds and live tensors
    std::string batchSize;  // the first complete iteration's peak against the end, and the growth
    uint64_t reservedBytes = 0;
    uint64_t liveBytes = 0;
    uint64_t cachedFreeBytes = 0;      // free in the allocator's cache
    uint64_t fragmentedBytes = 0;      // of it, in segments that hold live blocks
    std::optional<uint64_t> processBytes;  // what nvidia-smi shows (sessions with NVML)
    std::optional<uint64_t> firstIterationPeak;
    std::optional<uint64_t> endPeak;   // the last iteration's peak, or live + asked at an OOM
    std::optional<double> growthPerIteration;  // live bytes at iteration starts, per iteration
    bool oom = false;
    CategoryBytes categories;          // live bytes at the end by category
    bool hasCategories = false;
};

struct DoctorReport {
    std::string file;
    std::string kind;  // "snapshot", "session"
    int device = -1;   // the device diagnosed (-1: none with a trace)
    IterationSplit iterations;
    DoctorSummary summary;
    std::vector<Finding> findings;  // most severe first, then most bytes
    std::vector<std::string> notes; // what could not be judged, and why
};

// error: grows without bound or caused the OOM; warning: costs >= 1 MiB or >= 1% of the peak.
Severity severityFor(uint64_t bytes, uint64_t peak, bool unbounded);
// Most severe first, then most bytes, then rule id.
void sortFindings(std::vector<Finding>& findings);
// A frame as findings name it: "train.py:81 (main)" (the file's base name; line and function
// where known).
std::string frameText(const Snapshot& snapshot, FrameId frame);
// The innermost user frame of a stack ("train.py:81 (main)"), else the innermost frame that is
// not the recording machinery; "" for the empty stack.
std::string whereOf(const Snapshot& snapshot, StackId stack);
// Frames innermost first, at most `limit`.
std::vector<FindingFrame> framesOf(const Snapshot& snapshot, StackId stack, size_t limit = 40);

} // namespace memlens::model
