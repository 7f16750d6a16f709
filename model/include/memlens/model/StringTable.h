#pragma once
// Interned strings: each distinct string is stored once and named by a small id.
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace memlens::model {

using StringId = uint32_t;

class StringTable {
public:
    StringTable();
    StringTable(StringTable&&) noexcept = default;
    StringTable& operator=(StringTable&&) noexcept = default;

    static constexpr StringId kEmpty = 0;

    StringId intern(std::string_view s);
    // Id of s if present, otherwise kNotFound.
    static constexpr StringId kNotFound = ~StringId(0);
    StringId find(std::string_view s) const;

    std::string_view view(StringId id) const { return views_[id]; }
    size_t size() const { return views_.size(); }
    size_t bytes() const { return storedBytes_; }

private:
    char* allocate(size_t n);
    StringId internSlow(std::string_view s);

    // Short strings (up to 16 bytes) seen lately, by a hash of their bytes: a snapshot repeats a
    // few of them in every trace entry ('N/A', '', the action names) as new objects, and one
    // compare here is much less than hashing and comparing them in index_.
    struct Recent {
        uint64_t lo = 0, hi = 0;
        uint32_t size = ~uint32_t(0);  // none
        StringId id = 0;
    };
    static constexpr size_t kRecent = 1024;
    std::vector<Recent> recent_;

    std::vector<std::unique_ptr<char[]>> chunks_;
    size_t chunkUsed_ = 0;
    size_t chunkCap_ = 0;
    size_t storedBytes_ = 0;
    std::vector<std::string_view> views_;
    std::unordered_map<std::string_view, StringId> index_;
};

} // namespace memlens::model
