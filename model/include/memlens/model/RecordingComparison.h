#pragma once
// Compares a replay's events with the recorded trace as the simulator makes them (a SimEventSink
// for ReplayOptions::sink), so that a replay of millions of entries keeps none of its events.
// Compared: alloc, free_completed (and the old 'free'), segment_alloc, segment_free, segment_map,
// segment_unmap (action, address, size) and oom (size); see FirstDifference in Replay.h.
#include "memlens/model/Replay.h"
#include "memlens/model/SimEventSink.h"

#include <cstdint>

namespace memlens::model {

class RecordingComparison final : public SimEventSink {
public:
    explicit RecordingComparison(const DeviceData& device);  // the device must outlive this

    void onEvent(const SimEvent& event) override;
    // After the last event: the counts over the whole recording, and the first recorded entry no
    // event came for when every event matched. atRecordedAddress: ReplayResult's.
    Fidelity finish(uint64_t atRecordedAddress);

private:
    int64_t nextCompared(int64_t from) const;

    const TraceColumns& trace_;
    int64_t rows_ = 0;
    int64_t cursor_ = 0;   // the recorded entry the next event is compared with (from here on)
    uint64_t events_ = 0;  // events seen
    Fidelity f_;
    bool different_ = false;  // the first difference is found: nothing more is compared
};

} // namespace memlens::model
