#pragma once
// Everything computed from one file off the GUI thread: the snapshot, and per device its
// timeline, its allocator-state history and its allocations' lifetimes.
#include "memlens/model/AllocatorState.h"
#include "memlens/model/Snapshot.h"
#include "memlens/model/SnapshotReader.h"
#include "memlens/model/Timeline.h"
#include "core/AllocationLifetimes.h"

#include <map>
#include <memory>
#include <string>

namespace memlens::views {

struct LoadedSnapshot {
    std::string path;
    std::shared_ptr<const model::Snapshot> snapshot;
    std::map<int, std::shared_ptr<const model::DeviceTimeline>> timelines;
    std::map<int, std::shared_ptr<const model::StateHistory>> histories;
    std::map<int, std::shared_ptr<const AllocationLifetimes>> lifetimes;
    double loadSeconds = 0;

    // Reads the file and computes per-device data; throws model::ParseError or model::Cancelled.
    static std::shared_ptr<LoadedSnapshot> load(const std::string& path, const model::LoadOptions& options);
    // Per-device data for a snapshot already in memory (progress phase "rewinding"; may throw
    // model::Cancelled when options.cancel is set).
    static std::shared_ptr<LoadedSnapshot> fromSnapshot(model::Snapshot snapshot, std::string path,
                                                        const model::LoadOptions& options = {});
};

} // namespace memlens::views
