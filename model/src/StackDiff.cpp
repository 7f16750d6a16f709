#include "memlens/model/StackDiff.h"

#include "memlens/model/AllocationSites.h"

#include <algorithm>
#include <cstdlib>
#include <unordered_map>

namespace memlens::model {

const char* stackChangeName(StackDelta::Change c) {
    switch (c) {
    case StackDelta::Change::Appeared: return "appeared";
    case StackDelta::Change::Grew: return "grew";
    case StackDelta::Change::Shrank: return "shrank";
    case StackDelta::Change::Gone: return "gone";
    case StackDelta::Change::Same: return "same";
    }
    return "same";
}

std::string stackKey(const Snapshot& s, StackId stack) {
    std::string key;
    if (stack >= s.stackCount()) return key;
    for (const FrameId* f = s.stackBegin(stack); f != s.stackBegin(stack) + s.stackSize(stack); ++f) {
        const Frame& fr = s.frames[*f];
        key.append(s.str(fr.name));
        key.push_back('\x1f');
        key.append(s.str(fr.filename));
        key.push_back('\x1f');
        key.append(std::to_string(fr.line));
        key.push_back('\x1e');
    }
    return key;
}

std::vector<StackDelta> diffLiveByStack(const Snapshot& a, const DeviceState& stateA, const Snapshot& b,
                                        const DeviceState& stateB) {
    std::unordered_map<std::string, StackDelta> byKey;
    for (const StackCost& c : stackCostsAt(stateA)) {
        StackDelta& d = byKey[stackKey(a, c.stack)];
        d.stackA = c.stack;
        d.inA = true;
        d.bytesA += c.liveBytes;
        d.countA += c.liveCount;
    }
    for (const StackCost& c : stackCostsAt(stateB)) {
        StackDelta& d = byKey[stackKey(b, c.stack)];
        d.stackB = c.stack;
        d.inB = true;
        d.bytesB += c.liveBytes;
        d.countB += c.liveCount;
    }
    std::vector<StackDelta> out;
    out.reserve(byKey.size());
    for (auto& [key, d] : byKey) {
        if (!d.inA) d.change = StackDelta::Change::Appeared;
        else if (!d.inB) d.change = StackDelta::Change::Gone;
        else if (d.bytesB > d.bytesA) d.change = StackDelta::Change::Grew;
        else if (d.bytesB < d.bytesA) d.change = StackDelta::Change::Shrank;
        out.push_back(d);
    }
    std::sort(out.begin(), out.end(), [](const StackDelta& x, const StackDelta& y) {
        const int64_t ax = std::llabs(x.delta()), ay = std::llabs(y.delta());
        if (ax != ay) return ax > ay;
        return std::max(x.bytesA, x.bytesB) > std::max(y.bytesA, y.bytesB);
    });
    return out;
}

} // namespace memlens::model
