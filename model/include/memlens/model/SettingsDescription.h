#pragma once
// The snapshot's allocator settings (allocator_settings, torch 2.3+) and trace ring buffer, each
// as a line a person reads: the key, its value, and what it does to the caching allocator.
#include "memlens/model/Snapshot.h"

#include <string>
#include <vector>

namespace memlens::model {

struct SettingLine {
    std::string key;
    std::string value;    // as the snapshot has it
    std::string meaning;  // one sentence; empty for a key this version does not know
};

// In the snapshot's order; then, for the device, its trace ring buffer (trace_alloc_max_entries,
// trace_alloc_overflowed) when the snapshot says. Empty when the snapshot has neither.
std::vector<SettingLine> describeSettings(const Snapshot& snapshot, int device);

} // namespace memlens::model
