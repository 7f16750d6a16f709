#include "memlens/model/RecordingComparison.h"

namespace memlens::model {

namespace {

bool compared(Action a) {
    switch (a) {
    case Action::Alloc:
    case Action::FreeCompleted:
    case Action::Free:
    case Action::SegmentAlloc:
    case Action::SegmentFree:
    case Action::SegmentMap:
    case Action::SegmentUnmap:
    case Action::Oom: return true;
    default: return false;
    }
}

void noteSimulated(FirstDifference& d, const SimEvent& e, uint64_t index) {
    d.simulated = true;
    d.simulatedAction = e.action;
    d.simulatedAddr = e.addr;
    d.simulatedSize = e.size;
    d.simulatedIndex = static_cast<int64_t>(index);
}

} // namespace

RecordingComparison::RecordingComparison(const DeviceData& device)
    : trace_(device.trace), rows_(static_cast<int64_t>(device.trace.rows())) {}

int64_t RecordingComparison::nextCompared(int64_t from) const {
    while (from < rows_ && !compared(trace_.action[from])) ++from;
    return from;
}

void RecordingComparison::onEvent(const SimEvent& e) {
    const uint64_t index = events_++;
    if (different_) return;
    cursor_ = nextCompared(cursor_);
    if (cursor_ == rows_) {  // every recorded entry matched: the simulation goes on
        if (f_.extraSimulatedEvents++ == 0) noteSimulated(f_.first, e, index);
        return;
    }
    const Action a = trace_.action[cursor_];
    const Action expected = a == Action::Free ? Action::FreeCompleted : a;
    const uint64_t size = trace_.size[cursor_];
    const uint64_t addr = trace_.addr[cursor_];
    if (e.action == expected && e.size == size && (expected == Action::Oom || e.addr == addr)) {
        ++f_.matchingEntries;
        ++cursor_;
        return;
    }
    different_ = true;
    f_.first.entry = cursor_;
    f_.first.recordedAction = a;
    f_.first.recordedAddr = addr;
    f_.first.recordedSize = size;
    noteSimulated(f_.first, e, index);
}

Fidelity RecordingComparison::finish(uint64_t atRecordedAddress) {
    Fidelity f = f_;
    if (!different_ && f.extraSimulatedEvents == 0) {  // events ran out: the next recorded entry is the first difference
        const int64_t i = nextCompared(cursor_);
        if (i < rows_) {
            f.first.entry = i;
            f.first.recordedAction = trace_.action[i];
            f.first.recordedAddr = trace_.addr[i];
            f.first.recordedSize = trace_.size[i];
        }
    }
    for (int64_t i = 0; i < rows_; ++i) {
        const Action a = trace_.action[i];
        if (a == Action::Alloc) ++f.allocations;
        if (compared(a)) ++f.comparedEntries;
    }
    f.atRecordedAddress = atRecordedAddress;
    return f;
}

} // namespace memlens::model
