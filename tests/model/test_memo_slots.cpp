// MemoSlots against a plain array of the same slots: every slot reads back as written, whatever
// the block it is in was sealed as, and after writes that fit its code or do not.
#include "memlens/model/MemoSlots.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

using memlens::model::MemoSlots;

namespace {

uint32_t slot(uint32_t tag, uint32_t ref) { return tag << 27 | ref; }

void expectSame(const MemoSlots& memo, const std::vector<uint32_t>& plain, const char* what) {
    ASSERT_EQ(memo.size(), plain.size()) << what;
    for (size_t i = 0; i < plain.size(); ++i) ASSERT_EQ(memo.get(i), plain[i]) << what << ": slot " << i;
}

// read() (which may store a block read again as it is) of every 7th slot, then get() of all
void expectSameAfterReads(MemoSlots& memo, const std::vector<uint32_t>& plain, const char* what) {
    for (size_t i = 0; i < plain.size(); i += 7) ASSERT_EQ(memo.read(i), plain[i]) << what << ": read slot " << i;
    expectSame(memo, plain, what);
}

} // namespace

// A torch trace's memo: each entry's dict (a row, one more each entry) and its 'N/A' (the same
// string each time). Every sealed block holds two tags over a range of 32: a byte a slot, plus
// four 4-byte bases.
TEST(MemoSlots, ATraceShapedMemoIsSealedInBytes) {
    MemoSlots memo;
    std::vector<uint32_t> plain;
    const size_t entries = 200'000;
    for (uint32_t e = 0; e < entries; ++e) {
        for (uint32_t s : {slot(13, e), slot(3, 77)}) {
            memo.push_back(s);
            plain.push_back(s);
        }
    }
    expectSame(memo, plain, "trace");
    // the newest kRecent slots at least are not sealed
    const size_t sealedBlocks = (plain.size() - MemoSlots::kRecent + MemoSlots::kBlock - 1) / MemoSlots::kBlock;
    const auto f = memo.formats();
    EXPECT_EQ(f.codes8, sealedBlocks);
    EXPECT_EQ(f.codes16 + f.raw, 0u);
    // 80 bytes a sealed block (4 bases of 4 bytes, 64 codes of a byte) against 256 as plain slots
    EXPECT_EQ(memo.words().size() * 4, sealedBlocks * 80);
    // reads everywhere: at most 256 blocks and one in 8 are stored again as they are
    expectSameAfterReads(memo, plain, "trace, read");
    const auto g = memo.formats();
    EXPECT_GT(g.raw, 0u);
    EXPECT_LE(g.raw, 256 + sealedBlocks / 8 + 1);
    EXPECT_EQ(g.raw + g.codes8, sealedBlocks);
}

// Ranges too wide for a byte (but not for 14 bits), more tags than a block has bases, values
// spread over all 27 bits: each block in the format that holds it, each read back.
TEST(MemoSlots, EachBlockInTheFormatThatHoldsIt) {
    MemoSlots memo;
    std::vector<uint32_t> plain;
    std::mt19937 rng(7);
    auto add = [&](uint32_t s) {
        memo.push_back(s);
        plain.push_back(s);
    };
    for (int b = 0; b < 200; ++b) {
        for (size_t j = 0; j < MemoSlots::kBlock; ++j) {
            switch (b % 4) {
            case 0: add(slot(5, 1000 + static_cast<uint32_t>(rng() % 60))); break;           // a byte
            case 1: add(slot(5 + j % 2, 1000 + static_cast<uint32_t>(rng() % 16000))); break; // 14 bits
            case 2: add(slot(static_cast<uint32_t>(j % 6), static_cast<uint32_t>(j))); break; // six tags
            default: add(static_cast<uint32_t>(rng())); break;                                 // anything
            }
        }
    }
    expectSame(memo, plain, "mixed");
    const auto f = memo.formats();
    EXPECT_GT(f.codes8, 0u);
    EXPECT_GT(f.codes16, 0u);
    EXPECT_GT(f.raw, 0u);
    expectSameAfterReads(memo, plain, "mixed, read");
}

// Writes anywhere: the recent slots, sealed slots whose new value fits the block's code, and
// sealed slots whose value does not (the block is stored anew); reads in between expand blocks.
// Grown slots read as 0.
TEST(MemoSlots, WritesToSealedBlocksReadBack) {
    MemoSlots memo;
    std::vector<uint32_t> plain;
    for (uint32_t e = 0; e < 20'000; ++e) {
        memo.push_back(slot(13, e));
        plain.push_back(slot(13, e));
    }
    memo.grow(plain.size() + 100);
    plain.resize(plain.size() + 100, 0);
    std::mt19937 rng(11);
    for (int k = 0; k < 20'000; ++k) {
        const size_t i = rng() % plain.size();
        uint32_t s;
        switch (k % 3) {
        case 0: s = plain[i] + (rng() % 2); break;               // near what is there: fits, mostly
        case 1: s = slot(static_cast<uint32_t>(rng() % 20), static_cast<uint32_t>(rng() % 100000)); break;
        default: s = static_cast<uint32_t>(rng()); break;
        }
        memo.set(i, s);
        plain[i] = s;
        if (k % 1000 == 0) {
            const size_t r = rng() % plain.size();
            ASSERT_EQ(memo.read(r), plain[r]) << "read after " << k << " writes";
        }
    }
    expectSame(memo, plain, "written");
    expectSameAfterReads(memo, plain, "written, read");
    EXPECT_GT(memo.formats().raw, 0u) << "some blocks had to be stored anew";
}
