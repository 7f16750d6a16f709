#pragma once
// Reading the graph scans' JSON text, written by the Python agent or the C++ capture library
// (capture/python/memlens_agent/README-graphs.md).
#include "memlens/model/GraphScanData.h"
#include "memlens/model/SessionData.h"

#include <cstdint>
#include <string>

namespace memlens::model {

// Parses one stored scan. Never throws: a bad text gives a scan with error set.
GraphScanData parseGraphScan(const GraphScan& stored);
// Parses a scan object (JSON text) given iteration/phase/time from elsewhere.
GraphScanData parseGraphScanJson(const std::string& json, int64_t iteration = 0, const std::string& phase = {},
                                 int64_t timeUs = 0);

} // namespace memlens::model
