#include "memlens/model/GraphScanData.h"

#include <cstdlib>
#include <set>

namespace memlens::model {

const char* savedStateName(SavedState s) {
    switch (s) {
    case SavedState::Alive: return "alive";
    case SavedState::Released: return "released";
    case SavedState::Hooked: return "hooked";
    }
    return "?";
}

std::string SavedTensorInfo::shapeText() const {
    if (!inspected && shape.empty() && dtype.empty()) return {};
    std::string s = "[";
    for (size_t i = 0; i < shape.size(); ++i) {
        if (i) s += ", ";
        s += std::to_string(shape[i]);
    }
    s += "]";
    if (!dtype.empty()) s += " " + dtype;
    return s;
}

std::optional<int> cudaDeviceIndex(const std::string& device) {
    if (device == "cuda") return 0;
    if (device.rfind("cuda:", 0) != 0) return std::nullopt;
    return std::atoi(device.c_str() + 5);
}

bool GraphNodeInfo::isAccumulateGrad() const {
    return name.size() >= 14 && name.compare(name.size() - 14, 14, "AccumulateGrad") == 0;
}

std::string GraphNodeInfo::shortName() const {
    const auto p = name.rfind("::");
    return p == std::string::npos ? name : name.substr(p + 2);
}

uint64_t GraphNodeInfo::savedBytes() const {
    uint64_t total = 0;
    std::set<std::pair<std::string, uint64_t>> seen;
    for (const auto& s : saved) {
        if (s.state != SavedState::Alive || s.param || s.modifiedInPlace) continue;
        if (s.ptr && !seen.insert({s.device, *s.ptr}).second) continue;
        total += s.bytes;
    }
    return total;
}

int GraphNodeInfo::savedCount(SavedState st) const {
    int n = 0;
    for (const auto& s : saved) n += s.state == st;
    return n;
}

} // namespace memlens::model
