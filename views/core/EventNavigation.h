#pragma once
// Where keyboard stepping goes from the current trace entry. Each function returns the entry to
// go to, or nullopt when there is none in that direction (the caller stays where it is).
// `current` may be -1 (before the first entry).
#include "memlens/model/Snapshot.h"
#include "core/TimelineMarkers.h"

#include <cstdint>
#include <optional>

namespace memlens::views::navigation {

std::optional<int64_t> nextEvent(const model::TraceColumns& trace, int64_t current);
std::optional<int64_t> previousEvent(const model::TraceColumns& trace, int64_t current);

// The next / previous entry of the same allocation: alloc -> free_requested -> free_completed of
// one block (same address), or segment_alloc / map / unmap -> segment_free of one segment. It
// never crosses into an earlier or later allocation that reuses the address.
std::optional<int64_t> nextOfSameAllocation(const model::TraceColumns& trace, int64_t current);
std::optional<int64_t> previousOfSameAllocation(const model::TraceColumns& trace, int64_t current);

// The next / previous entry with this action (e.g. Oom).
std::optional<int64_t> nextWithAction(const model::TraceColumns& trace, int64_t current, model::Action action);
std::optional<int64_t> previousWithAction(const model::TraceColumns& trace, int64_t current, model::Action action);

// The next / previous start of a top-level marked range (an iteration, not the steps inside it).
std::optional<int64_t> nextMarker(const TimelineMarkers& markers, int64_t current);
std::optional<int64_t> previousMarker(const TimelineMarkers& markers, int64_t current);

} // namespace memlens::views::navigation
