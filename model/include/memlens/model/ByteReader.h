#pragma once
// Sequential reading of a file (in chunks, read ahead on a second thread, never the whole file at
// once) or of a memory buffer.
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace memlens::model {

class ByteReader {
public:
    // Reads a file in chunks; throws ParseError (no such file, unreadable) naming the problem.
    explicit ByteReader(const std::string& path);
    // Reads bytes the caller keeps alive.
    explicit ByteReader(std::span<const uint8_t> memory);
    ~ByteReader();
    ByteReader(const ByteReader&) = delete;
    ByteReader& operator=(const ByteReader&) = delete;

    uint64_t size() const { return size_; }
    uint64_t offset() const { return base_ + (pos_ - begin_); }
    uint64_t remaining() const { return size_ - offset(); }
    bool atEnd() const { return offset() >= size_; }

    uint8_t byte() {
        if (pos_ == end_) refill(1);
        return *pos_++;
    }
    // n contiguous bytes, valid until the next call. Throws ParseError when the file ends first.
    const uint8_t* take(uint64_t n) {
        if (static_cast<uint64_t>(end_ - pos_) < n) refill(n);
        const uint8_t* p = pos_;
        pos_ += n;
        return p;
    }
    // The bytes already buffered from the current position on, and a way to consume some of them.
    const uint8_t* cursor() const { return pos_; }
    size_t buffered() const { return static_cast<size_t>(end_ - pos_); }
    void skip(size_t n) { pos_ += n; }
    // Buffers n bytes from the current position on (see take).
    void ensure(uint64_t n) {
        if (buffered() < n) refill(n);
    }
    // Peeks at up to n bytes from the current position without consuming them.
    std::span<const uint8_t> peek(size_t n);

private:
    class ReadAhead;
    void refill(uint64_t n);
    void join(uint64_t n, std::unique_ptr<uint8_t[]> chunk, size_t len);

    std::unique_ptr<ReadAhead> ahead_;  // files only
    uint64_t size_ = 0;
    uint64_t base_ = 0;  // file offset of begin_
    std::unique_ptr<uint8_t[]> chunk_;  // holds begin_..end_, or else joined_ does
    std::vector<uint8_t> joined_;
    const uint8_t* begin_ = nullptr;
    const uint8_t* pos_ = nullptr;
    const uint8_t* end_ = nullptr;
};

} // namespace memlens::model
