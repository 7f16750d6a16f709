#pragma once
// Which trace entries the events list shows: by action, size, text (top frame or address) and
// entry range. Plain C++: it runs on a worker thread for long traces.
#include "memlens/model/Snapshot.h"

#include <atomic>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace memlens::views {

struct EventFilter {
    static constexpr uint32_t kAllActions = (1u << model::kActionCount) - 1;
    static constexpr uint32_t bit(model::Action a) { return 1u << static_cast<unsigned>(a); }

    uint32_t actions = kAllActions;
    uint64_t minSize = 0;
    uint64_t maxSize = std::numeric_limits<uint64_t>::max();
    // Case-insensitive; matches the top frame's label (frames::topFrameLabel), the entry's
    // user_metadata or compile_context, or the address in hex ("7f3a", "0x7f3a..." ). Empty
    // matches everything.
    std::string text;
    int64_t first = 0;  // entry range, both ends included
    int64_t last = std::numeric_limits<int64_t>::max();

    // True when only the range restricts: then the rows are simply [first, last].
    bool onlyRange() const;
    bool operator==(const EventFilter&) const = default;

    // The entries that pass, ascending. Empty if cancelled (check the flag).
    std::vector<int64_t> apply(const model::Snapshot& snapshot, const model::TraceColumns& trace,
                               const std::atomic<bool>* cancel = nullptr) const;
};

} // namespace memlens::views
