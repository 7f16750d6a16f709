#pragma once
// Why an allocation failed, judged at an `oom` trace entry from the allocator state just before
// it: the size asked against the largest usable free block, the cache's total free bytes and
// the device's free bytes, in one plain sentence.
#include "memlens/model/AllocatorState.h"

#include <cstdint>
#include <optional>
#include <string>

namespace memlens::model {

enum class OomKind : uint8_t {
    OutOfMemory,    // not enough free memory anywhere: the program holds too much
    Fragmentation,  // enough free memory in total, but no free piece big enough
    OtherStream,    // a big enough free block exists, cached for another stream or the other pool
    MemoryLimit,    // the device had room for a new segment: a memory fraction refused it
    Refused,        // a usable block looks big enough: oversize rules (max_split_size_mb) or an estimated state
};
const char* oomKindName(OomKind k);

struct OomVerdict {
    int64_t entry = -1;
    OomKind kind = OomKind::OutOfMemory;
    uint64_t asked = 0;              // the oom entry's size: the request rounded as the allocator does
    uint64_t newSegmentSize = 0;     // what a new segment for it would take (cudaMalloc size)
    std::optional<uint64_t> deviceFree;  // cudaMemGetInfo's free bytes, if the entry has them
    uint64_t stream = 0;
    bool smallPool = false;          // asked <= 1 MiB: served from the small pool
    uint64_t cacheFree = 0;          // all free bytes cached by the allocator
    uint64_t largestFree = 0;        // largest free block of any stream and pool
    uint64_t usableFree = 0;         // free bytes on the same stream and in the same pool
    uint64_t largestUsable = 0;      // largest of those
    uint64_t reservedBytes = 0;
    uint64_t liveBytes = 0;          // requested bytes of live blocks
    bool expandable = false;         // the device uses expandable segments
    std::string sentence;            // "fragmentation: 3.1 GiB free in total, largest free block 180 MiB, 512 MiB asked"
    std::string advice;              // one more sentence: what would help
};

// The segment size cudaMalloc is asked for a rounded request (caching-allocator §1.5).
uint64_t allocationSizeFor(uint64_t roundedSize);

// Judge a failed request of `asked` bytes on `stream`, given the state just before it.
OomVerdict judgeOom(const DeviceState& before, uint64_t asked, std::optional<uint64_t> deviceFree, uint64_t stream = 0);

// The verdict at trace entry `entry` of the history's device; nullopt unless it is an `oom` entry.
std::optional<OomVerdict> oomVerdictAt(const DeviceData& device, const StateHistory& history, int64_t entry);
// The same, given the device's state right before that entry (stateAfter(entry - 1)).
std::optional<OomVerdict> oomVerdictAt(const DeviceData& device, const DeviceState& before, int64_t entry);

} // namespace memlens::model
