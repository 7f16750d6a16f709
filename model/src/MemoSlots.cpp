#include "memlens/model/MemoSlots.h"


#include <algorithm>
#include <bit>
#include <cstring>
#include <stdexcept>

namespace memlens::model {

namespace {

constexpr uint32_t kTagShift = 27;                  // a slot's tag is its top 5 bits
constexpr size_t kMaxWords = size_t(1) << 30;       // a head keeps a word offset in 30 bits

} // namespace

MemoSlots::MemoSlots() : recent_(kRecent, 0) {}

void MemoSlots::reserve(size_t slots) {
    // codes of a byte each (the common case); a file that needs more grows the vectors
    words_.reserve(slots / kBlock * kWords[Codes8] + kWords[Raw]);
    heads_.reserve(slots / kBlock + 1);
}

uint32_t MemoSlots::store(const uint32_t* slots) {
    // the tags present and each one's lowest and highest slot, in one pass over a table a tag
    constexpr size_t kTags = size_t(1) << (32 - kTagShift);
    uint32_t low[kTags], high[kTags];
    std::fill(low, low + kTags, ~uint32_t(0));
    std::fill(high, high + kTags, uint32_t(0));
    uint32_t seen = 0;
    for (size_t j = 0; j < kBlock; ++j) {
        const uint32_t s = slots[j], t = s >> kTagShift;
        seen |= uint32_t(1) << t;
        low[t] = std::min(low[t], s);
        high[t] = std::max(high[t], s);
    }
    // a group a tag, at most kBases: a code is its group's number, then the slot less the base
    const int groups = std::popcount(seen);
    uint32_t bases[kBases];
    Format format = Raw;
    if (groups <= static_cast<int>(kBases)) {
        uint32_t span = 0;
        int g = 0;
        for (uint32_t m = seen; m; m &= m - 1, ++g) {
            const int t = std::countr_zero(m);
            bases[g] = low[t];
            span = std::max(span, high[t] - low[t]);
        }
        format = span < 64 ? Codes8 : span < 16384 ? Codes16 : Raw;
        for (size_t k = static_cast<size_t>(groups); k < kBases; ++k) bases[k] = bases[0];  // unused: as group 0
    }
    const size_t at = words_.size();
    if (at + kWords[format] > kMaxWords) throw std::length_error("a pickle memo of more than a billion slots");
    words_.resize(at + kWords[format]);
    uint32_t* w = words_.data() + at;
    if (format == Raw) {
        std::memcpy(w, slots, kBlock * sizeof(uint32_t));
    } else {
        std::memcpy(w, bases, sizeof bases);
        // per tag, what turns a slot into its code: group << bits, less the base (the code,
        // below 2^8 or 2^16, is then the low bits of the sum)
        const unsigned bits = format == Codes8 ? 6 : 14;
        uint32_t add[kTags];
        int g = 0;
        for (uint32_t m = seen; m; m &= m - 1, ++g) add[std::countr_zero(m)] = (uint32_t(g) << bits) - bases[g];
        if (format == Codes8) {
            auto* codes = reinterpret_cast<uint8_t*>(w + kBases);
            for (size_t j = 0; j < kBlock; ++j) codes[j] = static_cast<uint8_t>(slots[j] + add[slots[j] >> kTagShift]);
        } else {
            auto* codes = reinterpret_cast<uint16_t*>(w + kBases);
            for (size_t j = 0; j < kBlock; ++j) codes[j] = static_cast<uint16_t>(slots[j] + add[slots[j] >> kTagShift]);
        }
    }
    return static_cast<uint32_t>(at << 2) | format;
}

void MemoSlots::seal() {
    heads_.push_back(store(recent_.data() + (sealed_ & (kRecent - 1))));
    sealed_ += kBlock;
    if (heads_.size() % kExpandShare == 0) ++expandLeft_;
}

void MemoSlots::setSealed(uint64_t i, uint32_t slot) {
    const uint32_t head = heads_[i / kBlock];
    uint32_t* w = words_.data() + (head >> 2);
    const size_t j = i % kBlock;
    const uint32_t format = head & 3;
    if (format == Raw) {
        w[j] = slot;
        return;
    }
    const uint32_t limit = format == Codes8 ? 64 : 16384;
    for (uint32_t g = 0; g < kBases; ++g) {
        if ((w[g] >> kTagShift) == (slot >> kTagShift) && slot >= w[g] && slot - w[g] < limit) {
            if (format == Codes8)
                reinterpret_cast<uint8_t*>(w + kBases)[j] = static_cast<uint8_t>(g << 6 | (slot - w[g]));
            else
                reinterpret_cast<uint16_t*>(w + kBases)[j] = static_cast<uint16_t>(g << 14 | (slot - w[g]));
            return;
        }
    }
    expand(i / kBlock, i, slot);  // no room in the block's code
}

void MemoSlots::expand(uint64_t block, uint64_t at, uint32_t slot) {
    const size_t from = words_.size();
    if (from + kWords[Raw] > kMaxWords) throw std::length_error("a pickle memo of more than a billion slots");
    words_.resize(from + kWords[Raw]);
    for (size_t k = 0; k < kBlock; ++k) words_[from + k] = sealedAt(block * kBlock + k);
    words_[from + at % kBlock] = slot;
    heads_[block] = static_cast<uint32_t>(from << 2) | Raw;
}

uint32_t MemoSlots::readAndExpand(uint64_t i) {
    const uint32_t slot = sealedAt(i);
    expand(i / kBlock, i, slot);
    --expandLeft_;
    return slot;
}

MemoSlots::Formats MemoSlots::formats() const {
    Formats f;
    for (uint32_t head : heads_) {
        switch (head & 3) {
        case Codes8: ++f.codes8; break;
        case Codes16: ++f.codes16; break;
        default: ++f.raw; break;
        }
    }
    return f;
}

} // namespace memlens::model
