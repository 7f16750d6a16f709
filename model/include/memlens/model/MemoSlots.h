#pragma once
// The pickle machine's memo: one 4-byte slot per memoised value, kept compactly.
#include <cstddef>
#include <cstdint>
#include <vector>

namespace memlens::model {

// A growable array of 4-byte memo slots (PackedMemo values: a 5-bit tag in the top bits) that
// keeps the newest kRecent slots as they are and seals older ones in blocks of kBlock. A sealed
// block whose slots have at most four tags, each over a narrow range of values, is stored as
// those four bases and a small code per slot: a torch trace memoises each entry's dict (a row
// number, one more each entry) and a few strings (the same one each entry), and its blocks take
// 80 bytes instead of 256 (1.25 bytes a slot). Any slot is read in constant time; a sealed slot
// written again (rare: a container collapsed long after it was memoised, a PUT over an old index)
// is written in place where its block's code has room for it, otherwise the block is stored
// anew as it is (the old bytes stay unused).
class MemoSlots {
public:
    static constexpr size_t kBlock = 64;
    static constexpr size_t kRecent = 1024;  // a power of two, a multiple of kBlock
    static_assert((kRecent & (kRecent - 1)) == 0 && kRecent % kBlock == 0);

    MemoSlots();
    // Address space for the sealed blocks of about this many slots (pages cost when touched).
    void reserve(size_t slots);
    size_t size() const { return size_; }

    [[gnu::always_inline]] uint32_t get(uint64_t i) const {
        if (i >= sealed_) return recent_[i & (kRecent - 1)];
        return sealedAt(i);
    }
    // get() for a memo get: a sealed block read is stored as it is from then on, so that the
    // blocks a file reads again and again (the keys, shared frames) take one load each. At most
    // kExpandFree blocks and one sealed block in kExpandShare are stored again so (a file whose
    // gets go everywhere keeps its memo small; its other reads decode).
    [[gnu::always_inline]] uint32_t read(uint64_t i) {
        if (i >= sealed_) return recent_[i & (kRecent - 1)];
        const uint32_t head = heads_[i / kBlock];
        if ((head & 3) == Raw) [[likely]]
            return words_[(head >> 2) + i % kBlock];
        if (expandLeft_ != 0) return readAndExpand(i);
        return sealedAt(i);
    }
    void set(uint64_t i, uint32_t slot) {
        if (i >= sealed_)
            recent_[i & (kRecent - 1)] = slot;
        else
            setSealed(i, slot);
    }
    [[gnu::always_inline]] void push_back(uint32_t slot) {
        if (size_ - sealed_ == kRecent) [[unlikely]]
            seal();
        recent_[size_ & (kRecent - 1)] = slot;
        ++size_;
    }
    // Grows to n slots, the new ones 0.
    void grow(uint64_t n) {
        while (size_ < n) push_back(0);
    }

    // The sealed blocks' storage, for prefaulting it ahead of its growth.
    const std::vector<uint32_t>& words() const { return words_; }

    // How the sealed blocks are stored (for tests and benchmarks): blocks of each format.
    struct Formats {
        size_t raw = 0, codes8 = 0, codes16 = 0;
    };
    Formats formats() const;

private:
    enum Format : uint32_t { Raw = 0, Codes8 = 1, Codes16 = 2 };
    static constexpr size_t kBases = 4;
    static constexpr size_t kWords[3] = {kBlock, kBases + kBlock / 4, kBases + kBlock / 2};

    [[gnu::always_inline]] uint32_t sealedAt(uint64_t i) const {
        const uint32_t head = heads_[i / kBlock];
        const uint32_t* w = words_.data() + (head >> 2);
        const size_t j = i % kBlock;
        switch (head & 3) {
        case Codes8: {
            const uint8_t code = reinterpret_cast<const uint8_t*>(w + kBases)[j];
            return w[code >> 6] + (code & 63u);
        }
        case Codes16: {
            const uint16_t code = reinterpret_cast<const uint16_t*>(w + kBases)[j];
            return w[code >> 14] + (code & 0x3FFFu);
        }
        default:
            return w[j];
        }
    }
    void setSealed(uint64_t i, uint32_t slot);
    [[gnu::noinline]] uint32_t readAndExpand(uint64_t i);
    void expand(uint64_t block, uint64_t at, uint32_t slot);  // the block stored as it is, slot at `at` set
    void seal();
    // Appends the block of `slots` (kBlock of them) in the smallest format that holds it;
    // returns its head (word offset << 2 | format).
    uint32_t store(const uint32_t* slots);

    std::vector<uint32_t> recent_;  // kRecent slots, a ring: slot i at i % kRecent
    std::vector<uint32_t> heads_;   // per sealed block: its first word << 2 | its format
    std::vector<uint32_t> words_;   // the sealed blocks
    uint64_t size_ = 0;
    uint64_t sealed_ = 0;  // slots below this are in sealed blocks
    static constexpr size_t kExpandShare = 8;
    static constexpr size_t kExpandFree = 256;
    size_t expandLeft_ = kExpandFree;  // blocks read() may store again as they are: one more each kExpandShare sealed
};

} // namespace memlens::model
