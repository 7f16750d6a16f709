// StringTable against a std::map of the same strings: one id per distinct string, its bytes kept,
// whether a string is found through the table of recent short strings or through the index.
#include "memlens/model/StringTable.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>
#include <vector>

using memlens::model::StringId;
using memlens::model::StringTable;

TEST(StringTable, OneIdPerDistinctString) {
    // short strings that differ only in length, in a zero byte, in their last byte, past byte 8
    std::vector<std::string> pool = {"", std::string(1, '\0'), std::string(2, '\0'), "a", std::string("a\0", 2),
                                     "N/A", "N/B", "alloc", "free_requested", "12345678", "123456789",
                                     "1234567890123456", "12345678901234567", "1234567890123457"};
    std::mt19937 rng(3);
    for (int i = 0; i < 3000; ++i) {  // more than the recent table holds, lengths 0 to 24
        std::string t(rng() % 25, '\0');
        for (auto& c : t) c = static_cast<char>(rng() % 4);  // few letters: many near-equal strings
        pool.push_back(t);
    }
    StringTable table;
    std::map<std::string, StringId> oracle;
    for (int round = 0; round < 20000; ++round) {
        const std::string& t = pool[rng() % pool.size()];
        const StringId id = table.intern(t);
        auto [it, added] = oracle.emplace(t, id);
        ASSERT_EQ(id, it->second) << "round " << round << ": the same string, another id";
        ASSERT_EQ(table.view(id), t) << "round " << round;
    }
    std::map<StringId, std::string> byId;
    for (const auto& [t, id] : oracle) ASSERT_TRUE(byId.emplace(id, t).second) << "two strings with id " << id;
    EXPECT_EQ(table.size(), oracle.size() + (oracle.count("") ? 0 : 1)) << "the empty string is always there";
    for (const auto& [t, id] : oracle) EXPECT_EQ(table.find(t), id);
}
