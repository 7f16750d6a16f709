// AddressMap against std::unordered_map: the same random inserts, overwrites and erases (addresses
// shaped like an allocator's: multiples of 512 in a few segments, plus 0 and ~0), then every key
// looked up in both and the members compared.
#include "memlens/model/AddressMap.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <unordered_map>
#include <vector>

using memlens::model::AddressMap;

namespace {

void compare(const AddressMap<int64_t>& m, const std::unordered_map<uint64_t, int64_t>& ref,
             const std::vector<uint64_t>& keys) {
    ASSERT_EQ(m.size(), ref.size());
    for (uint64_t k : keys) {
        const int64_t* v = m.find(k);
        auto it = ref.find(k);
        ASSERT_EQ(v != nullptr, it != ref.end()) << "key " << k;
        if (v) {
            ASSERT_EQ(*v, it->second) << "key " << k;
        }
    }
    std::map<uint64_t, int64_t> members;
    m.forEach([&](uint64_t k, int64_t v) { EXPECT_TRUE(members.emplace(k, v).second) << "key twice: " << k; });
    const std::map<uint64_t, int64_t> expected(ref.begin(), ref.end());
    EXPECT_EQ(members, expected);
}

} // namespace

TEST(AddressMap, MatchesUnorderedMapUnderRandomChurn) {
    std::mt19937_64 rng(20261202);
    std::vector<uint64_t> keys = {0, ~0ull, 1, 512};
    for (uint64_t seg = 0; seg < 4; ++seg)
        for (uint64_t off = 0; off < 3000; ++off) keys.push_back(0x7f3c00000000ull + (seg << 32) + off * 512);
    AddressMap<int64_t> m(4);  // starts small: grows many times
    std::unordered_map<uint64_t, int64_t> ref;
    for (int step = 0; step < 400000; ++step) {
        const uint64_t k = keys[rng() % keys.size()];
        const int op = static_cast<int>(rng() % 10);
        if (op < 5) {
            m[k] = step;
            ref[k] = step;
        } else {
            EXPECT_EQ(m.erase(k), ref.erase(k) == 1);
        }
        if (step % 50000 == 0) compare(m, ref, keys);
    }
    compare(m, ref, keys);
    // empty it completely, then fill again: erasing every member leaves no stale slot behind
    for (uint64_t k : keys) {
        m.erase(k);
        ref.erase(k);
    }
    compare(m, ref, keys);
    EXPECT_TRUE(m.empty());
    for (size_t i = 0; i < keys.size(); i += 3) m[keys[i]] = ref[keys[i]] = static_cast<int64_t>(i);
    compare(m, ref, keys);
}

TEST(AddressMap, OperatorBracketInsertsAValueInitialisedMember) {
    AddressMap<int64_t> m;
    EXPECT_EQ(m.find(42), nullptr);
    EXPECT_EQ(m[42], 0);
    EXPECT_EQ(m.size(), 1u);
    m[42] += 5;
    ASSERT_NE(m.find(42), nullptr);
    EXPECT_EQ(*m.find(42), 5);
    EXPECT_FALSE(m.erase(43));
    EXPECT_TRUE(m.erase(42));
    EXPECT_EQ(m.find(42), nullptr);
    EXPECT_TRUE(m.empty());
}

// compact(): slots for the expected keys at a load of up to 3/4, where probe runs are long and
// erasing shifts many members back; filled to that load, churned, then grown past it.
TEST(AddressMap, ACompactMapAtThreeQuartersLoadMatchesUnorderedMap) {
    std::mt19937_64 rng(20261205);
    std::vector<uint64_t> keys;
    for (uint64_t seg = 0; seg < 3; ++seg)
        for (uint64_t off = 0; off < 4000; ++off) keys.push_back(0x7f3c00000000ull + (seg << 32) + off * 512);
    AddressMap<int64_t> m = AddressMap<int64_t>::compact(9000);
    std::unordered_map<uint64_t, int64_t> ref;
    for (size_t i = 0; i < 9000; ++i) m[keys[i]] = ref[keys[i]] = static_cast<int64_t>(i);
    compare(m, ref, keys);
    for (int step = 0; step < 200000; ++step) {
        const uint64_t k = keys[rng() % 9000];
        if (rng() % 2) {
            m[k] = step;
            ref[k] = step;
        } else {
            EXPECT_EQ(m.erase(k), ref.erase(k) == 1);
        }
    }
    compare(m, ref, keys);
    for (uint64_t k : keys) m[k] = ref[k] = static_cast<int64_t>(k >> 9);
    compare(m, ref, keys);
}
