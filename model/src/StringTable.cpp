#include "memlens/model/StringTable.h"

#include <cstring>

namespace memlens::model {

namespace {
constexpr size_t kChunk = 1 << 20;
}

StringTable::StringTable() : recent_(kRecent) {
    views_.emplace_back();
    index_.emplace(std::string_view(), kEmpty);
}

char* StringTable::allocate(size_t n) {
    if (n > kChunk / 4) {  // big strings get a chunk of their own
        chunks_.emplace_back(new char[n]);
        char* p = chunks_.back().get();
        // keep the current small chunk as the last one we fill
        if (chunks_.size() >= 2 && chunkCap_ != 0) std::swap(chunks_[chunks_.size() - 1], chunks_[chunks_.size() - 2]);
        return p;
    }
    if (chunkUsed_ + n > chunkCap_) {
        chunks_.emplace_back(new char[kChunk]);
        chunkUsed_ = 0;
        chunkCap_ = kChunk;
    }
    char* p = chunks_.back().get() + chunkUsed_;
    chunkUsed_ += n;
    return p;
}

StringId StringTable::intern(std::string_view s) {
    const size_t n = s.size();
    if (n > 16) return internSlow(s);
    // The string's bytes in two words with fixed-size loads (a variable-length copy is a call
    // and a stall): with the length, the words name the string exactly, overlapping loads too.
    const char* p = s.data();
    uint64_t lo = 0, hi = 0;
    if (n >= 8) {
        std::memcpy(&lo, p, 8);
        if (n > 8) std::memcpy(&hi, p + n - 8, 8);
    } else if (n >= 4) {
        uint32_t a, b;
        std::memcpy(&a, p, 4);
        std::memcpy(&b, p + n - 4, 4);
        lo = uint64_t(a) | uint64_t(b) << 32;
    } else if (n > 0) {
        lo = uint64_t(uint8_t(p[0])) | uint64_t(uint8_t(p[n / 2])) << 8 | uint64_t(uint8_t(p[n - 1])) << 16;
    }
    const uint64_t h = (lo * 0x9E3779B97F4A7C15ull) ^ (hi * 0xC2B2AE3D27D4EB4Full) ^ n;
    Recent& r = recent_[(h ^ (h >> 29)) % kRecent];
    if (r.size == n && r.lo == lo && r.hi == hi) return r.id;
    const StringId id = internSlow(s);
    r = Recent{lo, hi, static_cast<uint32_t>(n), id};
    return id;
}

StringId StringTable::internSlow(std::string_view s) {
    auto it = index_.find(s);
    if (it != index_.end()) return it->second;
    char* p = allocate(s.size() ? s.size() : 1);
    std::memcpy(p, s.data(), s.size());
    std::string_view stored(p, s.size());
    auto id = static_cast<StringId>(views_.size());
    views_.push_back(stored);
    index_.emplace(stored, id);
    storedBytes_ += s.size();
    return id;
}

StringId StringTable::find(std::string_view s) const {
    auto it = index_.find(s);
    return it == index_.end() ? kNotFound : it->second;
}

} // namespace memlens::model
