#pragma once
// What nvidia-smi shows for the job on one device over time: the NVML samples of a session
// (source "nvml": the job's processes' usedGpuMemory), for the device a snapshot calls D.
//
// NVML numbers devices physically while torch numbers the visible ones (CUDA_VISIBLE_DEVICES=3
// makes NVML's device 3 torch's cuda:0), so the device is chosen as: NVML device D if the job
// used memory there; else the only device the job used memory on; else NVML device D as it is
// (zeros); else none.
#include "memlens/model/SessionData.h"

#include <cstdint>
#include <vector>

namespace memlens::model {

struct TimedBytes {
    int64_t timeUs = 0;
    int64_t bytes = 0;
    bool operator==(const TimedBytes&) const = default;
};

// In time order; empty when the session has no NVML samples.
std::vector<TimedBytes> nvmlProcessSeries(const std::vector<DeviceSample>& samples, int device);

} // namespace memlens::model
