#include "FrameRunCache.h"

#include <algorithm>
#include <cstring>

namespace memlens::model {

namespace {
constexpr size_t kMaxBytes = 4 << 20;  // bounds the cache whatever the number of distinct runs
} // namespace

uint32_t FrameRunCache::find(std::span<const uint8_t> bytes, uint64_t hash) const {
    if (slots_.empty()) return kNone;
    size_t mask = slots_.size() - 1;
    for (size_t i = hash & mask;; i = (i + 1) & mask) {
        const Slot& s = slots_[i];
        if (s.entry == kNone) return kNone;
        if (s.hash != hash) continue;
        const Entry& e = entries_[s.entry];
        if (e.len == bytes.size() && std::memcmp(bytes_.data() + e.begin, bytes.data(), e.len) == 0) return s.entry;
    }
}

uint32_t FrameRunCache::add(std::span<const uint8_t> bytes, uint64_t hash, Value v) {
    if (bytes_.size() + bytes.size() > kMaxBytes) return kNone;
    if (entries_.size() * 2 >= slots_.size()) grow();
    size_t mask = slots_.size() - 1;
    size_t i = hash & mask;
    while (slots_[i].entry != kNone) i = (i + 1) & mask;
    const auto id = static_cast<uint32_t>(entries_.size());
    slots_[i] = {hash, id};
    entries_.push_back({static_cast<uint32_t>(bytes_.size()), static_cast<uint32_t>(bytes.size()), v});
    bytes_.insert(bytes_.end(), bytes.begin(), bytes.end());
    return id;
}

void FrameRunCache::grow() {
    std::vector<Slot> old(std::max<size_t>(1024, slots_.size() * 2));
    old.swap(slots_);
    size_t mask = slots_.size() - 1;
    for (const Slot& s : old) {
        if (s.entry == kNone) continue;
        size_t i = s.hash & mask;
        while (slots_[i].entry != kNone) i = (i + 1) & mask;
        slots_[i] = s;
    }
}

void FrameRunCache::clear() {
    slots_.clear();
    entries_.clear();
    bytes_.clear();
    last_ = kNone;
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
