#include "FrameRunCache.h"

#include <algorithm>
#include <cstring>

namespace memlens::model {

namespace {
constexpr size_t kMaxBytes = 4 << 20;  // bounds the cache whatever the number of distinct runs
} // namespace

const Value* FrameRunCache::find(std::span<const uint8_t> bytes, uint64_t hash) const {
    if (slots_.empty()) return nullptr;
    size_t mask = slots_.size() - 1;
    for (size_t i = hash & mask;; i = (i + 1) & mask) {
        const Slot& s = slots_[i];
        if (s.len == 0) return nullptr;
        if (s.hash == hash && s.len == bytes.size() && std::memcmp(bytes_.data() + s.begin, bytes.data(), s.len) == 0)
            return &s.value;
    }
}

void FrameRunCache::add(std::span<const uint8_t> bytes, uint64_t hash, Value v) {
    if (bytes_.size() + bytes.size() > kMaxBytes) return;
    if (count_ * 2 >= slots_.size()) grow();
    size_t mask = slots_.size() - 1;
    size_t i = hash & mask;
    while (slots_[i].len != 0) i = (i + 1) & mask;
    slots_[i] = {hash, static_cast<uint32_t>(bytes_.size()), static_cast<uint32_t>(bytes.size()), v};
    bytes_.insert(bytes_.end(), bytes.begin(), bytes.end());
    ++count_;
}

void FrameRunCache::grow() {
    std::vector<Slot> old(std::max<size_t>(1024, slots_.size() * 2));
    old.swap(slots_);
    size_t mask = slots_.size() - 1;
    for (const Slot& s : old) {
        if (s.len == 0) continue;
        size_t i = s.hash & mask;
        while (slots_[i].len != 0) i = (i + 1) & mask;
        slots_[i] = s;
    }
}

void FrameRunCache::clear() {
    slots_.clear();
    bytes_.clear();
    count_ = 0;
}

bool FrameRunCache::framesOf(const MemoGetRun& run) {
    if (ids_.size() < run.gets()) ids_.resize(run.gets());
    size_t n = 0;
    const bool frames = run.forEachSlot([&](const MemoSlot& slot) {
        if (slot.tag != Tag::Frame) return false;
        ids_[n++] = slot.ref;
        return true;
    });
    idCount_ = n;
    return frames;
}

} // namespace memlens::model
