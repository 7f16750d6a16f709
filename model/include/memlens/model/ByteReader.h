#pragma once
// Sequential reading of a file (in chunks, read ahead on a second thread, never the whole file at
// once) or of a memory buffer. A file compressed with gzip, zstd or xz (recognised by its first
// bytes) is decompressed as a stream on that thread: the reader sees the decompressed bytes.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
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
    // Reads a stream that PRODUCE makes on the read-ahead thread (memory_viz's JSON turned into
    // pickle bytes as it is parsed): it hands the bytes to the sink in pieces, and stops when the
    // sink returns false (the reader is being destroyed). What it throws (ParseError, Cancelled)
    // is thrown to the reader's caller where the stream ends. Like a compressed file, its size
    // is known only at its end; sourceBytes (the size of what it is made from) bounds it
    // (remaining()) and kind names it in messages ("JSON").
    using Sink = std::function<bool(const uint8_t*, size_t)>;
    ByteReader(std::function<void(const Sink&)> produce, uint64_t sourceBytes, const char* kind);
    ~ByteReader();
    ByteReader(const ByteReader&) = delete;
    ByteReader& operator=(const ByteReader&) = delete;

    // The bytes to read, when known: a compressed file's decompressed size is known only at its end.
    bool sizeKnown() const { return size_ != kUnknownSize; }
    uint64_t size() const { return size_; }
    // The size, or for a compressed file a guess at it (for sizing buffers).
    uint64_t sizeHint() const;
    uint64_t offset() const { return base_ + (pos_ - begin_); }
    // What is left to read. For a compressed file, an upper bound: what the compressed bytes can
    // plausibly hold (1100 times them, at least 1 GiB), so that one value claiming gigabytes of
    // a small file is refused at once instead of being buffered.
    uint64_t remaining() const {
        if (compressed() && offset() < compressedBound()) return compressedBound() - offset();
        return size_ - offset();
    }
    bool atEnd() const { return offset() >= size_; }
    // "gzip", "zstd", "xz" ("JSON" for a produced stream); nullptr when the file is not compressed.
    const char* compression() const { return compressed() ? format_ : nullptr; }
    // Progress through the file on disk: position and total (compressed bytes for a compressed file).
    uint64_t progressPosition() const;
    uint64_t progressTotal() const { return compressed() ? compressedSize_ : size_; }

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
    // Copies up to max bytes into dst and consumes them; 0 only at the end of the data (for a
    // compressed file: where its stream ends), never an error for reading up to the end.
    size_t readSome(uint8_t* dst, size_t max);

private:
    static constexpr uint64_t kUnknownSize = uint64_t(1) << 62;
    class ReadAhead;
    bool compressed() const { return compressedSize_ != kNotCompressed; }
    uint64_t compressedBound() const { return std::max<uint64_t>(compressedSize_ * 1100, uint64_t(1) << 30); }
    [[noreturn]] void endsEarly(uint64_t n) const;
    void refill(uint64_t n);
    void join(uint64_t n, std::unique_ptr<uint8_t[]> chunk, size_t len);

    std::unique_ptr<ReadAhead> ahead_;  // files only
    uint64_t size_ = 0;
    static constexpr uint64_t kNotCompressed = ~uint64_t(0);
    uint64_t compressedSize_ = kNotCompressed;  // the file's size on disk, when compressed
    const char* format_ = nullptr;
    bool produced_ = false;  // made by a producer (the JSON reader), not read from a file
    uint64_t base_ = 0;  // file offset of begin_
    std::unique_ptr<uint8_t[]> chunk_;  // holds begin_..end_, or else joined_ does
    std::vector<uint8_t> joined_;
    const uint8_t* begin_ = nullptr;
    const uint8_t* pos_ = nullptr;
    const uint8_t* end_ = nullptr;
};

} // namespace memlens::model
