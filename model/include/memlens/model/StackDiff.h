#pragma once
// Two moments compared by allocation stack: the live bytes of each stack in state A and state B
// (of one snapshot, or of two snapshots: stacks are matched by their frames, not their ids).
// Which stacks appeared, grew, shrank or are gone, as heaptrack's diff.
#include "memlens/model/AllocatorState.h"
#include "memlens/model/Snapshot.h"

#include <cstdint>
#include <string>
#include <vector>

namespace memlens::model {

struct StackDelta {
    enum class Change : uint8_t { Appeared, Grew, Shrank, Gone, Same };
    Change change = Change::Same;
    StackId stackA = 0;  // in snapshot A (0: absent there, or the empty stack)
    StackId stackB = 0;  // in snapshot B
    bool inA = false, inB = false;
    uint64_t bytesA = 0, bytesB = 0;
    uint64_t countA = 0, countB = 0;
    int64_t delta() const { return static_cast<int64_t>(bytesB) - static_cast<int64_t>(bytesA); }
};
const char* stackChangeName(StackDelta::Change c);

// A stack's frames as one comparable key (function, file and line of every frame).
std::string stackKey(const Snapshot& snapshot, StackId stack);

// Live bytes by stack in B against A; every stack of either, largest absolute change first.
std::vector<StackDelta> diffLiveByStack(const Snapshot& a, const DeviceState& stateA, const Snapshot& b,
                                        const DeviceState& stateB);

} // namespace memlens::model
