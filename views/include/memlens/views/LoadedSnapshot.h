#pragma once
// Everything computed from one file off the GUI thread: the snapshot, and per device its
// timeline and its allocator-state history.
#include "memlens/model/AllocatorState.h"
#include "memlens/model/Snapshot.h"
#include "memlens/model/SnapshotReader.h"
#include "memlens/model/Timeline.h"

#include <map>
#include <memory>
#include <string>

namespace memlens::views {

struct LoadedSnapshot {
    std::string path;
    std::shared_ptr<const model::Snapshot> snapshot;
    std::map<int, std::shared_ptr<const model::DeviceTimeline>> timelines;
    std::map<int, std::shared_ptr<const model::StateHistory>> histories;
    double loadSeconds = 0;

    // Reads the file and computes per-device data; throws model::ParseError or model::Cancelled.
    static std::shared_ptr<LoadedSnapshot> load(const std::string& path, const model::LoadOptions& options);
    // Per-device data for a snapshot already in memory.
    static std::shared_ptr<LoadedSnapshot> fromSnapshot(model::Snapshot snapshot, std::string path);
};

} // namespace memlens::views
