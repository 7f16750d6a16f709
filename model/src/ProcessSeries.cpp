#include "memlens/model/ProcessSeries.h"

#include <algorithm>
#include <set>

namespace memlens::model {

namespace {

bool isNvmlProcess(const DeviceSample& s) { return s.source == "nvml" && s.processUsed.has_value(); }

int chooseDevice(const std::vector<DeviceSample>& samples, int device) {
    std::set<int> present, used;
    for (const auto& s : samples) {
        if (!isNvmlProcess(s)) continue;
        present.insert(s.device);
        if (*s.processUsed > 0) used.insert(s.device);
    }
    if (used.count(device)) return device;
    if (used.size() == 1) return *used.begin();
    if (present.count(device)) return device;
    return -1;
}

} // namespace

std::vector<TimedBytes> nvmlProcessSeries(const std::vector<DeviceSample>& samples, int device) {
    std::vector<TimedBytes> out;
    const int chosen = chooseDevice(samples, device);
    if (chosen < 0) return out;
    for (const auto& s : samples)
        if (isNvmlProcess(s) && s.device == chosen) out.push_back({s.timeUs, *s.processUsed});
    std::stable_sort(out.begin(), out.end(), [](const TimedBytes& a, const TimedBytes& b) { return a.timeUs < b.timeUs; });
    return out;
}

} // namespace memlens::model
