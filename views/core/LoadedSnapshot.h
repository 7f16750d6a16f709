#pragma once
// Everything computed from one file off the GUI thread: the snapshot, and per device its
// timeline, its allocations' lifetimes and its allocator-state history, or (when those come
// later, as the window asks) its timeline and its final state only.
#include "memlens/model/AllocatorState.h"
#include "memlens/model/Snapshot.h"
#include "memlens/model/SnapshotReader.h"
#include "memlens/model/Timeline.h"
#include "core/AllocationLifetimes.h"
#include "core/TimelineExtras.h"

#include <future>
#include <map>
#include <memory>
#include <string>

namespace memlens::views {

// When the state histories (the checkpoints the block map rewinds from) and the allocations'
// lifetimes (the timeline's bands) are built: with the rest (the command line, tests), or later
// by the document that shows the file (the window: the timeline's curves are drawn first; on the
// 605 MB repeated real trace the history takes 0.7 s of its own, the lifetimes 0.15-0.28 s).
enum class StateHistories { WithTheRest, Later };

struct LoadedSnapshot {
    using FinalStates = std::map<int, std::shared_ptr<const model::DeviceState>>;

    std::string path;
    std::shared_ptr<const model::Snapshot> snapshot;
    std::map<int, std::shared_ptr<const model::DeviceTimeline>> timelines;
    std::map<int, std::shared_ptr<const TimelineExtras>> timelineExtras;
    std::map<int, std::shared_ptr<const model::StateHistory>> histories;  // empty: built Later
    // Per device, the state after its last entry (the document shows it while it builds the
    // histories): with StateHistories::Later, still being computed on a thread of its own when
    // the load returns (the window draws the timeline meanwhile); invalid otherwise.
    std::shared_future<FinalStates> finalStatesLater;
    std::map<int, std::shared_ptr<const AllocationLifetimes>> lifetimes;  // empty: built Later
    double loadSeconds = 0;

    // Reads the file and computes per-device data; throws model::ParseError or model::Cancelled.
    static std::shared_ptr<LoadedSnapshot> load(const std::string& path, const model::LoadOptions& options,
                                                StateHistories histories = StateHistories::WithTheRest);
    // Per-device data for a snapshot already in memory (progress phase "rewinding"; may throw
    // model::Cancelled when options.cancel is set).
    static std::shared_ptr<LoadedSnapshot> fromSnapshot(model::Snapshot snapshot, std::string path,
                                                        const model::LoadOptions& options = {},
                                                        StateHistories histories = StateHistories::WithTheRest);
};

} // namespace memlens::views
