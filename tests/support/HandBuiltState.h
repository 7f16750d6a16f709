#pragma once
// Allocator states built by hand for tests: the totals of a DeviceState computed from its
// segments the way StateHistory keeps them (reserved, allocated, requested, free, largest free).
#include "memlens/model/AllocatorState.h"

#include <algorithm>
#include <utility>
#include <vector>

namespace handbuilt {

inline memlens::model::DeviceState stateOf(std::vector<memlens::model::StateSegment> segments) {
    using memlens::model::StateBlockKind;
    memlens::model::DeviceState st;
    for (auto& s : segments) {
        st.reservedBytes += s.totalSize;
        for (const auto& b : s.blocks) {
            if (b.kind == StateBlockKind::Free) {
                st.freeBytes += b.size;
                st.largestFreeBlock = std::max(st.largestFreeBlock, b.size);
            } else {
                st.allocatedBytes += b.size;
                st.requestedBytes += b.requestedSize;
            }
        }
        st.segments.push_back(std::move(s));
    }
    return st;
}

} // namespace handbuilt
