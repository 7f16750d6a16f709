#pragma once
// A consistent, smaller snapshot cut out of one: one device's segments and blocks as they were
// right after entry `to`, its trace entries from..to, the annotations inside that range, and the
// allocator settings. It is a pickle as torch writes it, which PyTorch's memory_viz, Python's
// pickle and memlens read; replaying its trace backwards from its state gives the original's
// states over the range.
#include "memlens/model/Snapshot.h"

#include <cstdint>
#include <string>

namespace memlens::model {

struct SliceInfo {
    int64_t entries = 0;
    size_t segments = 0;
    size_t annotations = 0;
};

// Throws std::invalid_argument naming the problem when the device or the range is not in the
// snapshot (from <= to, both within the device's trace), or for the pinned host memory.
std::string sliceSnapshot(const Snapshot& snapshot, int device, int64_t from, int64_t to, SliceInfo* info = nullptr);

} // namespace memlens::model
