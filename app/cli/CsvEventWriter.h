#pragma once
// memlens-cli replay --csv: one line per simulated event, written to stdout as the simulator makes
// it (in 1 MiB pieces), so that no event is kept.
#include "memlens/model/AllocatorSimulator.h"

#include <string>

namespace memlens::cli {

class CsvEventWriter final : public model::SimEventSink {
public:
    CsvEventWriter();
    void onEvent(const model::SimEvent& event) override;
    void flush();  // after the last event

private:
    std::string out_;
};

} // namespace memlens::cli
