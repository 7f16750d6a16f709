#include "PickleEmitter.h"

#include <algorithm>
#include <cstring>

namespace memlens::model {

namespace {
void le(std::string& out, uint64_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) out += static_cast<char>((v >> (8 * i)) & 0xff);
}

// The slot of s in a table of 2^bits: its length and its first and last (up to) 8 bytes, mixed.
size_t recentSlot(std::string_view s, int bits) {
    const size_t n = s.size(), k = std::min<size_t>(n, 8);
    uint64_t first = 0, last = 0;
    if (k) {
        std::memcpy(&first, s.data(), k);
        std::memcpy(&last, s.data() + n - k, k);
    }
    const uint64_t h = (first * 0x9e3779b97f4a7c15ull) ^ (last * 0xc2b2ae3d27d4eb4full) ^ (n * 0x165667b19e3779f9ull);
    return static_cast<size_t>(h >> (64 - bits));
}
} // namespace

PickleEmitter::PickleEmitter(int protocol) {
    out_ += '\x80';
    out_ += static_cast<char>(protocol);
}

void PickleEmitter::integer(int64_t v) {
    if (v >= 0 && v < 256) {
        out_ += 'K';
        le(out_, static_cast<uint64_t>(v), 1);
    } else if (v >= 0 && v < 65536) {
        out_ += 'M';
        le(out_, static_cast<uint64_t>(v), 2);
    } else if (v >= INT32_MIN && v <= INT32_MAX) {
        out_ += 'J';
        le(out_, static_cast<uint64_t>(static_cast<uint32_t>(static_cast<int32_t>(v))), 4);
    } else {
        out_ += '\x8a';  // LONG1: little-endian two's complement, 8 bytes
        out_ += '\x08';
        le(out_, static_cast<uint64_t>(v), 8);
    }
}

void PickleEmitter::unsignedInteger(uint64_t v) {
    if (v <= static_cast<uint64_t>(INT64_MAX)) return integer(static_cast<int64_t>(v));
    out_ += '\x8a';  // 9 bytes: a zero byte keeps it positive
    out_ += '\x09';
    le(out_, v, 8);
    out_ += '\0';
}

void PickleEmitter::real(double v) {
    out_ += 'G';  // BINFLOAT: big-endian IEEE 754
    uint64_t bits;
    std::memcpy(&bits, &v, 8);
    for (int i = 7; i >= 0; --i) out_ += static_cast<char>((bits >> (8 * i)) & 0xff);
}

void PickleEmitter::str(std::string_view s, bool share) {
    Recent* recent = nullptr;
    if (share) {
        recent = &recent_[recentSlot(s, kRecentBits)];
        if (recent->key && *recent->key == s) return get(recent->id);
        if (auto it = strings_.find(s); it != strings_.end()) {
            *recent = {&it->first, it->second};
            return get(it->second);
        }
    }
    out_ += 'X';  // BINUNICODE: the bytes are UTF-8 as read
    le(out_, s.size(), 4);
    out_.append(s.data(), s.size());
    if (share) {
        const auto it = strings_.emplace(std::string(s), put()).first;
        *recent = {&it->first, it->second};
    }
}

uint32_t PickleEmitter::put() {
    const uint32_t id = next_++;
    if (id < 256) {
        out_ += 'q';
        le(out_, id, 1);
    } else {
        out_ += 'r';
        le(out_, id, 4);
    }
    return id;
}

void PickleEmitter::get(uint32_t id) {
    if (id < 256) {
        out_ += 'h';
        le(out_, id, 1);
    } else {
        out_ += 'j';
        le(out_, id, 4);
    }
}

std::string PickleEmitter::finish() {
    out_ += '.';
    return std::move(out_);
}

} // namespace memlens::model
