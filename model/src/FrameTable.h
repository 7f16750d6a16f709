#pragma once
// Internal to the snapshot reader.
#include "SnapshotKeys.h"

#include "memlens/model/PickleValue.h"
#include "memlens/model/Snapshot.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

namespace memlens::model {

// The frames and stacks of a snapshot as it is read, each stored once in the Snapshot: a frame
// dict's file, name and line give a frame id, a list of frame ids a stack id.
class FrameTable {
public:
    FrameTable(Snapshot& snap, const SnapshotKeys& keys) : snap_(snap), k_(keys) {}

    // A key a frame dict may start with.
    bool frameKey(StringId key) const { return key == k_.name || key == k_.filename || key == k_.line; }
    // The frame of a frame dict's keys and values ({filename, name, line} and the optional fx_node_op,
    // fx_node_name, fx_node_target, fx_original_trace; other keys ignored);
    // nullopt when they are not one. A dict of more than 4 keys whose first is not one of a
    // frame's own (torch writes name, filename, line first) is refused here, inline: every trace
    // entry dict of 3 to 8 keys is asked, and is no frame.
    std::optional<FrameId> frame(const Value* items, size_t n) {
        if (n > 8 && (items[0].tag != Tag::Str || !frameKey(items[0].ref))) return std::nullopt;
        return readFrame(items, n);
    }
    StackId stack(const FrameId* ids, size_t n);

private:
    std::optional<FrameId> readFrame(const Value* items, size_t n);
    struct FrameKey {
        StringId file, name;
        uint64_t line;
        bool known;
        StringId fxOp = 0, fxName = 0, fxTarget = 0, fxOriginal = 0;
        bool operator==(const FrameKey&) const = default;
    };
    struct FrameKeyHash {
        size_t operator()(const FrameKey& k) const {
            uint64_t h = k.file * 0x9E3779B97F4A7C15ull ^ (k.name + 0x632BE59BD9B4E019ull) * 0xBF58476D1CE4E5B9ull;
            h ^= (k.line + k.known) * 0x94D049BB133111EBull;
            h ^= (uint64_t(k.fxName) << 32 | k.fxOriginal) * 0xD6E8FEB86659FD93ull;
            return static_cast<size_t>(h ^ (h >> 31));
        }
    };
    void growStackTable();

    Snapshot& snap_;
    const SnapshotKeys& k_;
    std::unordered_map<FrameKey, FrameId, FrameKeyHash> frameIndex_;
    std::vector<StackId> stackSlots_;       // open addressing; a power of two; 0: empty
    std::vector<uint64_t> stackHashes_{0};  // per stack id; stack 0 is the empty stack
    size_t stackCount_ = 0;
};

} // namespace memlens::model
