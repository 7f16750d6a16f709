#include "FrameTable.h"

#include <algorithm>
#include <cstring>

namespace memlens::model {

namespace {

// Every frames list of the trace is hashed, so this runs over millions of ids: two frame ids
// per multiplication, in two independent chains that the processor runs side by side.
uint64_t hashFrames(const FrameId* ids, size_t n) {
    constexpr uint64_t kMul = 0x9E3779B97F4A7C15ull;
    uint64_t a = n, b = 0x632BE59BD9B4E019ull;
    size_t k = 0;
    for (; k + 4 <= n; k += 4) {
        uint64_t x, y;
        std::memcpy(&x, ids + k, 8);
        std::memcpy(&y, ids + k + 2, 8);
        a = (a ^ x) * kMul;
        a ^= a >> 32;
        b = (b ^ y) * kMul;
        b ^= b >> 32;
    }
    for (; k < n; ++k) a = (a ^ ids[k]) * kMul;
    uint64_t h = (a ^ (b >> 1)) * kMul;
    return h ^ (h >> 29);
}

} // namespace

std::optional<FrameId> FrameTable::readFrame(const Value* items, size_t n) {
    FrameKey key{0, 0, 0, false};
    bool haveFile = false, haveName = false, ok = true;
    for (size_t i = 0; i + 1 < n && ok; i += 2) {
        const Value& kv = items[i];
        const Value& v = items[i + 1];
        if (kv.tag != Tag::Str) {
            ok = false;
            break;
        }
        if (kv.ref == k_.filename && v.tag == Tag::Str) {
            key.file = v.ref;
            haveFile = true;
        } else if (kv.ref == k_.name && v.tag == Tag::Str) {
            key.name = v.ref;
            haveName = true;
        } else if (kv.ref == k_.line && (v.tag == Tag::Int || v.tag == Tag::UInt)) {
            key.line = v.bits;
            key.known = !(v.tag == Tag::UInt && v.bits == ~uint64_t(0)) && !(v.tag == Tag::Int && v.asInt() < 0);
        } else if (kv.ref == k_.line || kv.ref == k_.filename || kv.ref == k_.name) {
            ok = false;
        } else if (v.tag == Tag::Str) {
            if (kv.ref == k_.fx_node_op) key.fxOp = v.ref;
            else if (kv.ref == k_.fx_node_name) key.fxName = v.ref;
            else if (kv.ref == k_.fx_node_target) key.fxTarget = v.ref;
            else if (kv.ref == k_.fx_original_trace) key.fxOriginal = v.ref;
        }  // other extra keys are ignored
    }
    if (!ok || !haveFile || !haveName) return std::nullopt;
    auto [it, inserted] = frameIndex_.try_emplace(key, static_cast<FrameId>(snap_.frames.size()));
    if (inserted)
        snap_.frames.push_back(
            Frame{key.file, key.name, key.line, key.known, key.fxOp, key.fxName, key.fxTarget, key.fxOriginal});
    return it->second;
}

StackId FrameTable::stack(const FrameId* ids, size_t n) {
    uint64_t h = hashFrames(ids, n);
    if (stackSlots_.empty() || stackCount_ * 2 >= stackSlots_.size()) growStackTable();
    size_t mask = stackSlots_.size() - 1;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
        StackId s = stackSlots_[i];
        if (s == 0) {
            s = static_cast<StackId>(snap_.stackOffsets.size() - 1);
            snap_.stackFrames.insert(snap_.stackFrames.end(), ids, ids + n);
            snap_.stackOffsets.push_back(static_cast<uint32_t>(snap_.stackFrames.size()));
            stackSlots_[i] = s;
            stackHashes_.push_back(h);
            ++stackCount_;
            return s;
        }
        if (stackHashes_[s] == h && snap_.stackSize(s) == n && std::equal(ids, ids + n, snap_.stackBegin(s)))
            return s;
    }
}

void FrameTable::growStackTable() {
    std::vector<StackId> slots(stackSlots_.empty() ? 1024 : stackSlots_.size() * 2, 0);
    size_t mask = slots.size() - 1;
    for (StackId s : stackSlots_) {
        if (s == 0) continue;
        size_t i = stackHashes_[s] & mask;
        while (slots[i] != 0) i = (i + 1) & mask;
        slots[i] = s;
    }
    stackSlots_.swap(slots);
}

} // namespace memlens::model
