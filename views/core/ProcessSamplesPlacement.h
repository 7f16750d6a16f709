#pragma once
// Where a session's samples of what nvidia-smi shows (model::nvmlProcessSeries) lie on the
// timeline: the samples taken while the trace ran, on either x axis (time: microseconds since the
// first entry; index: the entry in force at the sample's time, plus the fraction of the way to
// the next entry), and the one in force when the trace starts, at its start. Samples and trace
// entries share the clock (epoch microseconds), so nothing is placed when the trace has no times.
#include "memlens/model/ProcessSeries.h"
#include "core/EntryAxis.h"

#include <vector>

namespace memlens::views {

struct PlacedSample {
    double x = 0;
    double bytes = 0;
};

// traceTimeUs: the device's trace times (non-decreasing; empty when absent).
std::vector<PlacedSample> placeProcessSamples(const std::vector<model::TimedBytes>& series,
                                              const model::TimeColumn& traceTimeUs, const EntryAxis& axis);

// The largest value in force anywhere in [x0, x1] (samples hold until the next one); 0 if none.
double maxInForce(const std::vector<PlacedSample>& placed, double x0, double x1);

} // namespace memlens::views
