#pragma once
// Internal to the snapshot reader: frames lists recognised by their bytes.
#include "memlens/model/PickleMachine.h"
#include "memlens/model/Snapshot.h"

#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

namespace memlens::model {

// A snapshot's frames lists are runs of memo gets of frames already seen, and its trace repeats
// the same few hundred of them: a run of the same bytes is the same memo gets of the same frames,
// so a run seen before is neither scanned nor interned again. That holds as long as no memo slot
// holding a frame is rewritten: the reader then empties the cache (clear()). Bounded to 4 MB of
// runs whatever their number. Each run also remembers the run that followed it last (recall()).
class FrameRunCache {
public:
    // What `run` stands for: the cached value of the same bytes, else intern(ids, n) of its frames
    // (Value intern(const FrameId* ids, size_t n)), which is then cached. False when a get of the
    // run reads something else than a frame.
    template <class Intern>
    bool absorb(const MemoGetRun& run, Value& out, Intern&& intern) {
        const uint64_t hash = hashBytes(run.bytes());
        if (const uint32_t known = find(run.bytes(), hash); known != kNone) {
            out = entries_[known].value;
            followed(known);
            return true;
        }
        if (!framesOf(run)) return false;
        out = intern(ids_.data(), idCount_);
        followed(add(run.bytes(), hash, out));
        return true;
    }
    // The run that followed the last one the last time, if the bytes at p (avail of them) are
    // its bytes: its length (APPENDS included), its value in out. 0 otherwise. A training loop's
    // iterations repeat their stacks in the same order, so most runs are the one predicted, and
    // they are then neither measured nor hashed. Bytes equal to a whole run read as that run (a
    // run's bytes alone decide where it ends), so a prediction is right or refused, never wrong.
    size_t recall(const uint8_t* p, size_t avail, Value& out) {
        if (last_ == kNone) return 0;
        const uint32_t next = entries_[last_].next;
        if (next == kNone) return 0;
        const Entry& e = entries_[next];
        if (e.len > avail || std::memcmp(bytes_.data() + e.begin, p, e.len) != 0) return 0;
        out = e.value;
        last_ = next;
        return e.len;
    }
    void clear();

private:
    static constexpr uint32_t kNone = ~uint32_t(0);
    struct Entry {
        uint32_t begin = 0;
        uint32_t len = 0;
        Value value;
        uint32_t next = kNone;  // the entry that followed this one last
    };
    struct Slot {
        uint64_t hash = 0;
        uint32_t entry = kNone;  // kNone: empty
    };
    void followed(uint32_t entry) {  // entry (kNone: not cached) came after last_
        if (last_ != kNone && entry != kNone) entries_[last_].next = entry;
        last_ = entry;
    }
    // A run's bytes hashed 8 at a time, in two independent chains; the last 16 bytes are read as
    // two words (overlapping bytes already hashed), short runs byte by byte. Inline: it runs once
    // per frames list of the file.
    static uint64_t hashBytes(std::span<const uint8_t> bytes) {
        const uint8_t* p = bytes.data();
        const size_t n = bytes.size();
        constexpr uint64_t kMul = 0x9E3779B97F4A7C15ull;
        uint64_t a = n, b = 0x632BE59BD9B4E019ull;
        uint64_t x = 0, y = 0;
        for (size_t k = 0; k + 16 <= n; k += 16) {
            std::memcpy(&x, p + k, 8);
            std::memcpy(&y, p + k + 8, 8);
            a = (a ^ x) * kMul;
            a ^= a >> 32;
            b = (b ^ y) * kMul;
            b ^= b >> 32;
        }
        if (n >= 8) {
            std::memcpy(&x, p + (n >= 16 ? n - 16 : 0), 8);
            std::memcpy(&y, p + n - 8, 8);
        } else {
            x = y = 0;
            for (size_t i = 0; i < n; ++i) x |= static_cast<uint64_t>(p[i]) << (8 * i);
        }
        a = (a ^ x) * kMul;
        b = (b ^ y) * kMul;
        uint64_t h = (a ^ (b >> 1)) * kMul;
        return h ^ (h >> 29);
    }
    uint32_t find(std::span<const uint8_t> bytes, uint64_t hash) const;  // its entry, or kNone
    uint32_t add(std::span<const uint8_t> bytes, uint64_t hash, Value v);  // its entry (kNone: full)
    void grow();
    bool framesOf(const MemoGetRun& run);  // the run's frame ids into ids_

    std::vector<Slot> slots_;  // open addressing over entries_; a power of two
    std::vector<Entry> entries_;
    std::vector<uint8_t> bytes_;
    uint32_t last_ = kNone;  // the entry of the last run absorbed or recalled
    std::vector<FrameId> ids_;
    size_t idCount_ = 0;
};

} // namespace memlens::model
