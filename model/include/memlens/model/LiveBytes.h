#pragma once
// The requested bytes live after each entry of a trace (an alloc adds its size, a free_requested
// or an old trace's free takes it away), without keeping a value per entry: the doctor's
// iterations read a few of them and the largest over ranges. Kept as a series (packed, about 4
// bytes an entry, 27 MB on a 6.85 million-entry trace) they were the doctor's largest allocation,
// at the window's peak.
//
// The trace is rewound once from the live bytes at its end, keeping per block of kBlock entries
// the value after its last entry and its largest. The value after an entry comes from the nearer
// end of its block (at most kBlock / 2 entries run); the largest over a range from the blocks
// inside it and, at its ends, its own entries run from the block's end (the first) or start (the
// last): a range costs at most its length. 16 bytes per kBlock entries. The trace must outlive it.
#include "memlens/model/Snapshot.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace memlens::model {

class LiveBytes {
public:
    static constexpr size_t kBlock = 128;

    // liveAtEnd: the requested bytes live after the last entry (the final state's).
    LiveBytes(const TraceColumns& trace, uint64_t liveAtEnd);

    // After entry e; before the first entry for e < 0; e past the end: after the last.
    int64_t after(int64_t e) const;
    // The largest value after an entry of [first, last] (first <= last < the trace's rows).
    int64_t maxIn(size_t first, size_t last) const;
    // The largest value after any entry; the smallest int64 for a trace without entries.
    int64_t max() const;

private:
    int64_t delta(size_t i) const;
    int64_t start(size_t block) const { return block == 0 ? before_ : ends_[block - 1]; }
    size_t end(size_t block) const { return std::min(n_, (block + 1) * kBlock); }  // one past its last entry

    const TraceColumns& t_;
    size_t n_;
    std::vector<int64_t> ends_;   // per block: live after its last entry
    std::vector<int64_t> maxes_;  // per block: the largest live after one of its entries
    int64_t before_ = 0;          // live before the first entry
};

} // namespace memlens::model
