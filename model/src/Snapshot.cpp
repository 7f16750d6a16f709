#include "memlens/model/Snapshot.h"


#include <algorithm>
#include <climits>
#include <stdexcept>

namespace memlens::model {

namespace {
constexpr const char* kActionNames[] = {
    "alloc", "free_requested", "free_completed", "free", "segment_alloc", "segment_free",
    "segment_map", "segment_unmap", "snapshot", "oom", "user_defined", "other",
};
}

const char* actionName(Action a) { return kActionNames[static_cast<int>(a)]; }

Action actionFromName(std::string_view name) {
    for (int i = 0; i < kActionCount - 1; ++i)
        if (name == kActionNames[i]) return static_cast<Action>(i);
    return Action::Other;
}

const char* blockStateName(BlockState s) {
    switch (s) {
    case BlockState::ActiveAllocated: return "active_allocated";
    case BlockState::ActivePendingFree: return "active_pending_free";
    case BlockState::Inactive: return "inactive";
    }
    return "?";
}

void TraceColumns::reserve(size_t n) {
    action.reserve(n);
    actionName.reserve(n);
    flags.reserve(n);
    addr.reserve(n);
    size.reserve(n);
    stream.reserve(n);
    timeUs.reserve(n);
    stack.reserve(n);
    compileContext.reserve(n);
    userMetadata.reserve(n);
}

void TraceColumns::clear() { *this = TraceColumns(); }

int32_t TraceColumns::rowsAsInt32(std::string_view whose) const {
    if (rows() > static_cast<size_t>(INT32_MAX))
        throw std::length_error("a trace of " + std::to_string(rows()) + " entries is more than " + std::string(whose) +
                                " can index (2^31 - 1)");
    return static_cast<int32_t>(rows());
}

size_t TraceColumns::memoryBytes() const {
    // rows in use: capacity reserved beyond them is address space the kernel never backs
    return rows() * (sizeof(Action) + 1) + stack.memoryBytes() + addr.memoryBytes() + timeUs.memoryBytes() + size.memoryBytes() + actionName.memoryBytes() + stream.memoryBytes() +
           compileContext.memoryBytes() + userMetadata.memoryBytes();
}

Snapshot::Snapshot() : stackOffsets{0, 0} {}
Snapshot::Snapshot(Snapshot&&) noexcept = default;
Snapshot& Snapshot::operator=(Snapshot&&) noexcept = default;
Snapshot::~Snapshot() = default;

std::string deviceName(int device) {
    return device == kHostDevice ? std::string("host") : "cuda:" + std::to_string(device);
}

std::string deviceLabel(int device) {
    return device == kHostDevice ? std::string("host (pinned)") : "cuda:" + std::to_string(device);
}

std::string poolName(PoolId p) {
    if (p.isDefault()) return "default pool";
    return "private pool (" + std::to_string(p.owner) + ", " + std::to_string(p.id) + ")";
}

const DeviceData* Snapshot::device(int d) const {
    auto it = std::lower_bound(devices.begin(), devices.end(), d,
                               [](const DeviceData& dd, int v) { return dd.device < v; });
    return it != devices.end() && it->device == d ? &*it : nullptr;
}

size_t Snapshot::memoryBytes() const {
    size_t n = strings.bytes() + frames.capacity() * sizeof(Frame) + stackOffsets.capacity() * 4 +
               stackFrames.capacity() * 4;
    for (const auto& d : devices)
        n += d.segments.capacity() * sizeof(Segment) + d.blocks.capacity() * sizeof(Block) + d.trace.memoryBytes();
    return n;
}

} // namespace memlens::model
