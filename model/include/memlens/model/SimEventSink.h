#pragma once
// Where AllocatorSimulator hands each event as it makes it, instead of keeping them all (a replay
// of millions of entries makes millions of events; a comparison or a CSV writer needs each once).
#include <cstdint>

namespace memlens::model {

struct SimEvent;

class SimEventSink {
public:
    virtual ~SimEventSink() = default;
    virtual void onEvent(const SimEvent& event) = 0;
};

} // namespace memlens::model
