#pragma once
// An error found while reading a file: where it is (a byte offset or a key path) and what was wrong.
#include <cstdint>
#include <stdexcept>
#include <string>

namespace memlens::model {

class ParseError : public std::runtime_error {
public:
    static constexpr uint64_t kNoOffset = ~uint64_t(0);

    ParseError(uint64_t offset, std::string where, const std::string& what)
        : std::runtime_error(what), offset_(offset), where_(std::move(where)) {}
    ParseError(uint64_t offset, const std::string& what) : ParseError(offset, {}, what) {}

    uint64_t offset() const { return offset_; }
    const std::string& where() const { return where_; }

    // "FILE: byte 123: what" or "FILE: segments[2].blocks[0]: what" - one line.
    std::string describe(const std::string& file) const;

private:
    uint64_t offset_;
    std::string where_;
};

// Thrown when a load is cancelled by its caller.
class Cancelled : public std::runtime_error {
public:
    Cancelled() : std::runtime_error("cancelled") {}
};

} // namespace memlens::model
