#pragma once
// One PyTorch CUDA memory snapshot, normalised across every layout from torch 2.0 to 2.11:
// segments and blocks per device, and each device's trace in columns. Frames and whole stacks
// are stored once and named by ids.
#include "memlens/model/DictionaryColumn.h"
#include "memlens/model/OffsetColumn.h"
#include "memlens/model/SparseColumn.h"
#include "memlens/model/IndexColumn.h"
#include "memlens/model/StringTable.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace memlens::model {

using FrameId = uint32_t;
using StackId = uint32_t;  // 0 is the empty stack

struct Frame {
    StringId filename = 0;
    StringId name = 0;
    uint64_t line = 0;
    bool lineKnown = true;  // false for (size_t)-1 and for frames without a line
    // The FX node of a frame of generated code (_dump_snapshot(augment_with_fx_traces=True)):
    // fx_node_op, fx_node_name, fx_node_target and fx_original_trace (the model's own code);
    // StringTable::kEmpty when absent.
    StringId fxOp = 0;
    StringId fxName = 0;
    StringId fxTarget = 0;
    StringId fxOriginalTrace = 0;
    bool hasFx() const { return fxOp || fxName || fxTarget || fxOriginalTrace; }
};

// The pinned host memory of torch's CUDA host allocator (host_segments, host_traces; torch 2.14,
// record_pinned_host_memory=True) is read as one more device with this number.
constexpr int kHostDevice = -1;
// "cuda:N", or "host" for kHostDevice.
std::string deviceName(int device);
// "cuda:N", or "host (pinned)": for labels.
std::string deviceLabel(int device);

enum class Action : uint8_t {
    Alloc,
    FreeRequested,
    FreeCompleted,
    Free,  // old traces: free_requested and free_completed in one entry
    SegmentAlloc,
    SegmentFree,
    SegmentMap,
    SegmentUnmap,
    Snapshot,
    Oom,
    UserDefined,
    Other,  // any other name; the name is kept in TraceColumns::actionName
};
constexpr int kActionCount = static_cast<int>(Action::Other) + 1;
const char* actionName(Action a);
Action actionFromName(std::string_view name);

enum class BlockState : uint8_t { ActiveAllocated, ActivePendingFree, Inactive };
const char* blockStateName(BlockState s);

struct Block {
    uint64_t address = 0;
    uint64_t size = 0;
    uint64_t requestedSize = 0;
    BlockState state = BlockState::Inactive;
    StackId stack = 0;
};

// A private pool's id (segment_pool_id): (0, 0) is the default pool; (N, 0) a CUDA graph's pool,
// (0, N) one from graph_pool_handle() or a torch.cuda.MemPool.
struct PoolId {
    int64_t owner = 0;
    int64_t id = 0;
    bool isDefault() const { return owner == 0 && id == 0; }
    auto operator<=>(const PoolId&) const = default;
};
std::string poolName(PoolId p);  // "default pool", "private pool (1, 0)"

struct Segment {
    int device = 0;
    uint64_t address = 0;
    uint64_t totalSize = 0;
    uint64_t allocatedSize = 0;
    uint64_t activeSize = 0;
    uint64_t requestedSize = 0;
    uint64_t stream = 0;
    bool isLarge = true;
    bool isExpandable = false;
    int64_t poolOwner = 0;
    int64_t poolId = 0;
    StackId stack = 0;
    PoolId pool() const { return {poolOwner, poolId}; }
    uint32_t firstBlock = 0;  // index into DeviceData::blocks
    uint32_t blockCount = 0;
};

// A device's trace, one column per field, one row per entry, oldest first.
struct TraceColumns {
    enum Flag : uint8_t { HasAddr = 1, HasTime = 2, HasFrames = 4, HasDeviceFree = 8 };
    std::vector<Action> action;
    // Columns where nearly every row holds one value keep it once (SparseColumn).
    SparseColumn<StringId> actionName;  // the action's text where action is Other; 0 elsewhere
    std::vector<uint8_t> flags;
    AddressColumn addr;  // for oom: device_free; 1 to 4 bytes a row (OffsetColumn)
    DictionaryColumn size;  // the trace's distinct sizes once, a row their index (1, 2 or 4 bytes)
    SparseColumn<uint64_t> stream;
    TimeColumn timeUs;  // 1 to 4 bytes a row (OffsetColumn)
    IndexColumn stack;  // 1, 2 or 4 bytes a row: as many as the largest stack id needs
    SparseColumn<StringId> compileContext;
    SparseColumn<StringId> userMetadata;

    size_t rows() const { return action.size(); }
    // rows() for what indexes entries in 32 signed bits (whose: its name, for the message);
    // throws std::length_error for a trace of more than 2^31 - 1 entries.
    int32_t rowsAsInt32(std::string_view whose) const;
    void reserve(size_t n);
    void clear();
    size_t memoryBytes() const;
};

struct DeviceData {
    int device = 0;
    std::vector<Segment> segments;  // in address order
    std::vector<Block> blocks;      // grouped by segment, in address order
    TraceColumns trace;
    bool hasTraceList = false;      // device_traces had a list for this device
    // The trace ring buffer (trace_alloc_overflowed, trace_alloc_max_entries of torch after 2.11):
    // overflowed means entries before the first one were dropped. Unknown when the file does not say.
    std::optional<bool> traceOverflowed;
    std::optional<int64_t> traceMaxEntries;

    bool isHost() const { return device == kHostDevice; }
    // The trace starts mid-run: the ring buffer overflowed.
    bool traceTruncated() const { return traceOverflowed.value_or(false); }
};

struct Annotation {
    int device = 0;
    bool start = true;
    StringId name = 0;
    int64_t timeUs = -1;
};

enum class Layout : uint8_t {
    BareSegmentList,  // pickled torch.cuda.memory_snapshot()
    Legacy20,         // torch 2.0: per-block history, no block addresses
    Dict,             // {segments, device_traces, ...} from about torch 2.1 on
};

class Snapshot {
public:
    Snapshot();
    Snapshot(Snapshot&&) noexcept;
    Snapshot& operator=(Snapshot&&) noexcept;
    ~Snapshot();

    StringTable strings;
    std::vector<Frame> frames;
    std::vector<uint32_t> stackOffsets;  // stack s has frames [stackOffsets[s], stackOffsets[s+1])
    std::vector<FrameId> stackFrames;
    std::vector<DeviceData> devices;     // sorted by device
    std::vector<Annotation> annotations;
    std::vector<std::pair<std::string, std::string>> allocatorSettings;  // key, value as text
    std::vector<std::string> warnings;  // broken invariants, as text
    // What the file holds that memlens reads but does not show yet (keys of trace entries or of the
    // top level it does not know), one line each: said, never dropped in silence.
    std::vector<std::string> notes;
    Layout layout = Layout::Dict;
    int pickleProtocol = 0;
    uint64_t fileBytes = 0;
    // How the reader went: dicts (trace entries, blocks) read by the template of one read before,
    // their numbers only (LoadOptions::dictTemplates). For tests and benchmarks.
    uint64_t dictsReplayed = 0;

    size_t stackCount() const { return stackOffsets.size() - 1; }
    size_t stackSize(StackId s) const { return stackOffsets[s + 1] - stackOffsets[s]; }
    const FrameId* stackBegin(StackId s) const { return stackFrames.data() + stackOffsets[s]; }
    std::string_view str(StringId id) const { return strings.view(id); }
    // An entry's user_metadata or compile_context as shown: empty for none and for torch's 'N/A'
    // (compile_context outside a compiled region).
    std::string_view entryLabel(StringId id) const {
        const std::string_view s = strings.view(id);
        return s == "N/A" ? std::string_view() : s;
    }

    const DeviceData* device(int d) const;
    // Devices are sorted by number, so the host (kHostDevice) comes first when present.
    bool hasHost() const { return device(kHostDevice) != nullptr; }
    size_t memoryBytes() const;
};

} // namespace memlens::model
