#include "memlens/model/AddressSpace.h"

#include <algorithm>

namespace memlens::model {

namespace {
constexpr uint64_t kGiB = 1ull << 30;
constexpr size_t kMaxTries = 64;
} // namespace

void AddressSpace::addRecordedSegment(uint64_t size, uint64_t address) {
    Recorded& r = bySize_[size];
    r.addresses.push_back(address);
    r.used.push_back(false);
    highest_ = std::max(highest_, address + size);
}

void AddressSpace::addRecordedMap(uint64_t stream, uint64_t address, int64_t position) {
    maps_[stream].push_back({address, position});
    highest_ = std::max(highest_, address + 1);
}

void AddressSpace::reserveExisting(uint64_t address, uint64_t size) {
    live_[address] = address + size;
    highest_ = std::max(highest_, address + size);
}

bool AddressSpace::overlaps(uint64_t address, uint64_t size) const {
    auto it = live_.lower_bound(address + size);
    if (it == live_.begin()) return false;
    --it;
    return it->second > address;
}

uint64_t AddressSpace::invent(uint64_t size) {
    if (next_ == 0) next_ = (highest_ + kGiB - 1) / kGiB * kGiB + kGiB;
    uint64_t a = next_;
    next_ += (size + (2ull << 20) - 1) / (2ull << 20) * (2ull << 20);
    ++invented_;
    return a;
}

uint64_t AddressSpace::takeSegment(uint64_t size) {
    auto it = bySize_.find(size);
    if (it != bySize_.end()) {
        Recorded& r = it->second;
        while (r.cursor < r.addresses.size() && r.used[r.cursor]) ++r.cursor;
        size_t tries = 0;
        for (size_t i = r.cursor; i < r.addresses.size() && tries < kMaxTries; ++i) {
            if (r.used[i]) continue;
            ++tries;
            if (overlaps(r.addresses[i], size)) continue;
            r.used[i] = true;
            live_[r.addresses[i]] = r.addresses[i] + size;
            ++recordedTaken_;
            return r.addresses[i];
        }
    }
    uint64_t a = invent(size);
    live_[a] = a + size;
    return a;
}

uint64_t AddressSpace::takeReservation(uint64_t stream, uint64_t size, uint64_t pageSize, int64_t position) {
    auto it = maps_.find(stream);
    if (it != maps_.end()) {
        auto& v = it->second;
        auto first = std::lower_bound(v.begin(), v.end(), position,
                                      [](const RecordedMap& m, int64_t p) { return m.position < p; });
        size_t tries = 0;
        for (auto m = first; m != v.end() && tries < kMaxTries; ++m, ++tries) {
            if (overlaps(m->address, pageSize)) continue;
            live_[m->address] = m->address + pageSize;
            ++recordedTaken_;
            return m->address;
        }
    }
    uint64_t a = invent(size);
    live_[a] = a + pageSize;
    return a;
}

void AddressSpace::extend(uint64_t base, uint64_t end) {
    auto it = live_.find(base);
    if (it != live_.end() && it->second < end) it->second = end;
}

void AddressSpace::release(uint64_t address) { live_.erase(address); }

} // namespace memlens::model
