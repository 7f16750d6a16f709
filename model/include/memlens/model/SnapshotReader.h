#pragma once
// Reads a snapshot pickle into a Snapshot without executing anything from the file.
#include "memlens/model/Snapshot.h"

#include <atomic>
#include <cstdint>
#include <functional>
#include <span>
#include <string>

namespace memlens::model {

struct LoadOptions {
    // Called now and then with a phase name and a fraction in [0, 1].
    std::function<void(const char* phase, double fraction)> progress;
    // Set to true from any thread to stop the load; it then throws Cancelled.
    const std::atomic<bool>* cancel = nullptr;
    // false: every dict goes through the pickle machine's stack, none is read whole from its
    // bytes (PickleLimits::wholeDicts). The same Snapshot either way; tests compare the two.
    bool wholeDicts = true;
    // false: no dict is read by the template of one read before (PickleLimits::dictTemplates).
    bool dictTemplates = true;
};

// Throw ParseError (use describe(path) for the one-line message) or Cancelled.
Snapshot readSnapshotFile(const std::string& path, const LoadOptions& options = {});
Snapshot readSnapshotMemory(std::span<const uint8_t> bytes, const LoadOptions& options = {});

} // namespace memlens::model
