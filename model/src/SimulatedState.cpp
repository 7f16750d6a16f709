#include "memlens/model/SimulatedState.h"

#include "memlens/model/Replay.h"
#include "memlens/model/Workload.h"

#include <algorithm>

namespace memlens::model {

DeviceState simulatedStateAfter(const Snapshot& snapshot, int device, const SimulatorSettings& settings,
                                const WorkloadEdits& edits, int64_t entry) {
    Workload w = buildWorkload(snapshot, device, settings);
    if (edits.any()) applyEdits(w, snapshot, edits);
    ReplayOptions options;
    options.recordedRefusals = false;  // as whatIf() replays
    options.series = false;
    options.stopAfterEntry = entry;
    options.keepSegments = true;
    options.events = false;
    const ReplayResult r = replay(w, settings, options);

    DeviceState state;
    state.device = device;
    state.at = entry;
    for (const auto& seg : r.segments) {
        StateSegment s;
        s.address = seg.address;
        s.totalSize = seg.size;
        s.stream = seg.stream;
        s.isExpandable = seg.expandable;
        s.isLarge = !seg.small;
        for (const auto& b : seg.blocks) {
            StateBlock block;
            block.address = b.address;
            block.size = b.size;
            block.requestedSize = b.allocated ? b.requested : 0;
            block.kind = b.allocated ? StateBlockKind::Allocated : StateBlockKind::Free;
            s.blocks.push_back(block);
            if (b.allocated) {
                state.allocatedBytes += b.size;
                state.requestedBytes += b.requested;
            } else {
                state.freeBytes += b.size;
                state.largestFreeBlock = std::max(state.largestFreeBlock, b.size);
            }
        }
        state.reservedBytes += seg.size;
        state.segments.push_back(std::move(s));
    }
    return state;
}

} // namespace memlens::model
