#include "memlens/model/StringTable.h"

#include <cstring>

namespace memlens::model {

namespace {
constexpr size_t kChunk = 1 << 20;
}

StringTable::StringTable() {
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
