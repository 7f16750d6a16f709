#pragma once
// The settings of PyTorch's CUDA caching allocator that change where memory goes
// (PYTORCH_CUDA_ALLOC_CONF), plus the device the allocator runs on: its capacity and the
// per-process memory fraction. Read from a snapshot's allocator_settings, changed key by key.
#include <array>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

namespace memlens::model {

class Snapshot;

struct SimulatorSettings {
    static constexpr uint64_t kUnlimited = std::numeric_limits<uint64_t>::max();
    static constexpr uint64_t kMiB = 1ull << 20;

    bool expandableSegments = false;
    uint64_t maxSplitSize = kUnlimited;             // max_split_size_mb, in bytes
    uint64_t maxNonSplitRounding = 20 * kMiB;       // max_non_split_rounding_mb (2.6+), in bytes
    uint64_t largeSegmentSize = 20 * kMiB;          // large_segment_size_mb (2.11+): kLargeBuffer
    double garbageCollectionThreshold = 0.0;        // (0, 1); 0: off
    std::array<uint32_t, 16> roundupDivisions{};    // per slot floor(log2(size)) - 20, clamped; 0/1: none
    uint64_t capacity = 0;                          // device memory torch may use; 0: unlimited
    double fraction = 0.0;                          // per-process memory fraction; 0: not set

    // The settings in force in the snapshot (allocator_settings, and its PYTORCH_CUDA_ALLOC_CONF
    // for the keys the dict does not hold); the defaults where the snapshot has none.
    static SimulatorSettings fromSnapshot(const Snapshot& snapshot);

    // Sets one key as PYTORCH_CUDA_ALLOC_CONF spells it (expandable_segments, max_split_size_mb,
    // max_non_split_rounding_mb, large_segment_size_mb, garbage_collection_threshold,
    // roundup_power2_divisions: "4" or "[256:1,512:2,>:4]", per_process_memory_fraction) or one
    // of the device's: capacity (bytes), fraction. Throws std::invalid_argument with a one-line
    // message for an unknown key or a bad value.
    void set(std::string_view key, std::string_view value);
    // Every key=value of a PYTORCH_CUDA_ALLOC_CONF string (keys the simulator does not model,
    // such as backend or pinned_*, are ignored).
    void applyAllocConf(std::string_view conf);

    // round_size(): the block size for a request.
    uint64_t roundSize(uint64_t size) const;
    // get_allocation_size(): the segment size cudaMalloc'ed for a rounded size.
    uint64_t allocationSize(uint64_t rounded) const;
    // The memory limit alloc_block enforces (fraction x capacity); kUnlimited when no fraction is set.
    uint64_t allowedMaximum() const;
    bool fractionSet() const { return fraction > 0.0; }
    bool gcActive() const { return fractionSet() && garbageCollectionThreshold > 0.0; }

    // key=value pairs that differ from the defaults, for reports.
    std::string describe() const;
};

} // namespace memlens::model
