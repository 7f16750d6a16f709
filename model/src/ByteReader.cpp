#include "memlens/model/ByteReader.h"

#include "Decompressor.h"

#include "memlens/model/ParseError.h"

#include <cerrno>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>

namespace memlens::model {

namespace {
constexpr size_t kChunk = 2 << 20;   // bytes read at once
constexpr size_t kHead = 64 << 10;   // room before a chunk for the unread tail of the previous one
constexpr size_t kBuffer = kHead + kChunk;
constexpr size_t kCompressedPiece = 1 << 20;  // compressed bytes read at once
}

// Reads the file on a second thread, one chunk ahead of the parser: the kernel's copy of the
// next chunk overlaps with parsing the current one instead of adding to the load time. Two
// buffers circulate: the one being parsed and the one being filled (or waiting to be parsed).
class ByteReader::ReadAhead {
public:
    using Buffer = std::unique_ptr<uint8_t[]>;
    struct Chunk {
        Buffer data;  // the bytes are data[kHead, kHead + len)
        size_t len = 0;
    };

    ReadAhead(int fd, uint64_t size) : fd_(fd), size_(size), thread_([this] { loop(); }) {}
    // A compressed file of `size` bytes: the chunks are its decompressed stream.
    ReadAhead(int fd, uint64_t size, std::unique_ptr<Decompressor> d, const char* format)
        : fd_(fd), size_(size), decompressor_(std::move(d)), format_(format), thread_([this] { loopCompressed(); }) {}
    // A stream made by a producer on this thread.
    explicit ReadAhead(std::function<void(const Sink&)> produce)
        : fd_(-1), size_(0), producer_(std::move(produce)), thread_([this] { loopProduced(); }) {}
    ~ReadAhead() {
        {
            std::lock_guard lock(m_);
            stop_ = true;
        }
        cv_.notify_all();
        thread_.join();
        if (fd_ >= 0) ::close(fd_);
    }

    // The next chunk in file order, once read; len 0 when the file ended before its size.
    Chunk next() {
        std::unique_lock lock(m_);
        cv_.wait(lock, [&] { return ready_.data || done_; });
        if (!ready_.data && failure_) std::rethrow_exception(failure_);
        if (!ready_.data && !error_.empty()) throw ParseError(errorOffset_, error_);
        Chunk c = std::move(ready_);
        ready_ = {};
        lock.unlock();
        cv_.notify_all();
        return c;
    }
    // Hands a chunk's buffer back to be filled again.
    void recycle(Buffer b) {
        {
            std::lock_guard lock(m_);
            spares_.push_back(std::move(b));
        }
        cv_.notify_all();
    }

    // Compressed bytes read so far (for progress).
    uint64_t consumed() const { return consumed_.load(std::memory_order_relaxed); }

private:
    // Takes a buffer to fill; nullptr when stopped.
    Buffer takeBuffer() {
        std::unique_lock lock(m_);
        cv_.wait(lock, [&] { return stop_ || (!ready_.data && (!spares_.empty() || buffers_ < 2)); });
        if (stop_) return nullptr;
        if (spares_.empty()) {
            ++buffers_;
            return Buffer(new uint8_t[kBuffer]);
        }
        Buffer b = std::move(spares_.back());
        spares_.pop_back();
        return b;
    }
    void publish(Buffer buf, size_t len, bool last, std::string error, uint64_t errorOffset) {
        {
            std::lock_guard lock(m_);
            if (error.empty()) {
                if (len) ready_ = {std::move(buf), len};
            } else {
                error_ = std::move(error);
                errorOffset_ = errorOffset;
            }
            done_ = last || !error_.empty();
        }
        cv_.notify_all();
    }

    void loopCompressed() {
        std::unique_ptr<uint8_t[]> input(new uint8_t[kCompressedPiece]);
        const uint8_t* in = input.get();
        size_t inLen = 0;
        uint64_t fileOffset = 0;
        bool inputEnded = false, streamEnd = false;
        while (!streamEnd) {
            Buffer buf = takeBuffer();
            if (!buf) return;
            uint8_t* out = buf.get() + kHead;
            size_t have = 0;
            std::string error;
            while (have < kChunk && !streamEnd && error.empty()) {
                if (inLen == 0 && !inputEnded) {
                    ssize_t r;
                    do {
                        r = ::pread(fd_, input.get(), kCompressedPiece, static_cast<off_t>(fileOffset));
                    } while (r < 0 && errno == EINTR);
                    if (r < 0) {
                        error = std::string("read failed: ") + std::strerror(errno);
                        break;
                    }
                    in = input.get();
                    inLen = static_cast<size_t>(r);
                    fileOffset += inLen;
                    inputEnded = r == 0 || fileOffset >= size_;
                    consumed_.store(fileOffset, std::memory_order_relaxed);
                }
                const size_t before = inLen;
                const int64_t w = decompressor_->run(in, inLen, out + have, kChunk - have, inputEnded, streamEnd, error);
                if (w < 0) break;
                have += static_cast<size_t>(w);
                if (w == 0 && before == inLen && inLen == 0 && inputEnded && !streamEnd)
                    error = std::string("the ") + format_ + " stream ends early (truncated?) at byte " +
                            std::to_string(fileOffset) + " of the compressed file";
            }
            if (!error.empty() && error.find("compressed file") == std::string::npos)
                error += " (near byte " + std::to_string(fileOffset) + " of the compressed file)";
            const bool failed = !error.empty();
            // the message says where in the compressed file; an offset in the decompressed data would mislead
            publish(std::move(buf), have, streamEnd, std::move(error), ParseError::kNoOffset);
            if (failed) return;
        }
    }

    // The producer's pieces go into the chunk buffers; a full chunk is handed over at once.
    void loopProduced() {
        Buffer buf;
        size_t have = 0;
        const Sink sink = [&](const uint8_t* p, size_t n) {
            while (n > 0) {
                if (!buf) {
                    buf = takeBuffer();
                    have = 0;
                    if (!buf) return false;  // stopped
                }
                const size_t k = std::min(n, kChunk - have);
                std::memcpy(buf.get() + kHead + have, p, k);
                have += k;
                p += k;
                n -= k;
                if (have == kChunk) publish(std::move(buf), have, false, {}, 0);
            }
            return true;
        };
        try {
            producer_(sink);
        } catch (...) {
            {
                std::lock_guard lock(m_);
                failure_ = std::current_exception();
                done_ = true;
            }
            cv_.notify_all();
            return;
        }
        const size_t len = buf ? have : 0;
        publish(std::move(buf), len, true, {}, 0);
    }

    void loop() {
        for (uint64_t offset = 0; offset < size_;) {
            Buffer buf;
            {
                std::unique_lock lock(m_);
                cv_.wait(lock, [&] { return stop_ || (!ready_.data && (!spares_.empty() || buffers_ < 2)); });
                if (stop_) return;
                if (spares_.empty()) {
                    buf.reset(new uint8_t[kBuffer]);
                    ++buffers_;
                } else {
                    buf = std::move(spares_.back());
                    spares_.pop_back();
                }
            }
            size_t want = static_cast<size_t>(std::min<uint64_t>(kChunk, size_ - offset));
            size_t have = 0;
            std::string error;
            while (have < want) {
                ssize_t r = ::pread(fd_, buf.get() + kHead + have, want - have, static_cast<off_t>(offset + have));
                if (r < 0 && errno == EINTR) continue;
                if (r < 0) error = std::string("read failed: ") + std::strerror(errno);
                if (r <= 0) break;  // an error, or the file shrank: the parser reports it
                have += static_cast<size_t>(r);
            }
            {
                std::lock_guard lock(m_);
                if (error.empty()) {
                    ready_ = {std::move(buf), have};
                } else {
                    error_ = error;
                    errorOffset_ = offset + have;
                }
                done_ = have < want;
            }
            cv_.notify_all();
            if (have < want) return;
            offset += have;
        }
        {
            std::lock_guard lock(m_);
            done_ = true;
        }
        cv_.notify_all();
    }

    int fd_;
    uint64_t size_;
    std::unique_ptr<Decompressor> decompressor_;  // compressed files only
    std::function<void(const Sink&)> producer_;  // produced streams only
    std::exception_ptr failure_;                 // what the producer threw
    const char* format_ = "";
    std::atomic<uint64_t> consumed_{0};
    std::mutex m_;
    std::condition_variable cv_;
    Chunk ready_;                // read, not yet taken
    std::vector<Buffer> spares_;  // given back, to be filled next
    int buffers_ = 0;
    bool done_ = false;
    bool stop_ = false;
    std::string error_;
    uint64_t errorOffset_ = 0;
    std::thread thread_;  // last: starts once the members above exist
};

ByteReader::ByteReader(const std::string& path) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw ParseError(ParseError::kNoOffset, std::string("cannot open: ") + std::strerror(errno));
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        ::close(fd);
        throw ParseError(ParseError::kNoOffset, "not a regular file");
    }
    size_ = static_cast<uint64_t>(st.st_size);
#ifdef POSIX_FADV_SEQUENTIAL
    ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
#endif
    // compressed (gzip, zstd, xz): recognised by the magic bytes, whatever the file is called
    uint8_t head[8] = {};
    ssize_t got = ::pread(fd, head, sizeof head, 0);
    const auto format = Decompressor::detect({head, got > 0 ? static_cast<size_t>(got) : 0});
    if (format != Decompressor::Format::None) {
        compressedSize_ = size_;
        format_ = Decompressor::formatName(format);
        size_ = kUnknownSize;
        ahead_ = std::make_unique<ReadAhead>(fd, compressedSize_, Decompressor::make(format), format_);
        return;
    }
    ahead_ = std::make_unique<ReadAhead>(fd, size_);
}

uint64_t ByteReader::progressPosition() const {
    return compressed() ? ahead_->consumed() : offset();
}

uint64_t ByteReader::sizeHint() const {
    // the decompressed size is known only at the end: snapshots compress about 5 to 10 times;
    // guess low (what it sizes only grows when the guess is short). A produced stream (pickle
    // from JSON) is smaller than its source: JSON writes every shared frame out again.
    if (produced_) return compressedSize_ / 4;
    return compressed() ? compressedSize_ * 4 : size_;
}

ByteReader::ByteReader(std::function<void(const Sink&)> produce, uint64_t sourceBytes, const char* kind)
    : size_(kUnknownSize), compressedSize_(sourceBytes), format_(kind), produced_(true) {
    ahead_ = std::make_unique<ReadAhead>(std::move(produce));
}

ByteReader::ByteReader(std::span<const uint8_t> memory) : size_(memory.size()) {
    begin_ = pos_ = memory.data();
    end_ = memory.data() + memory.size();
}

ByteReader::~ByteReader() = default;

std::span<const uint8_t> ByteReader::peek(size_t n) {
    if (compressed()) {
        // the decompressed data may be shorter than n: take what there is, up to n
        while (buffered() < n) {
            const uint64_t newBase = offset();
            ReadAhead::Chunk c = ahead_->next();
            if (c.len == 0) break;
            std::vector<uint8_t> joined(pos_, end_);
            joined.insert(joined.end(), c.data.get() + kHead, c.data.get() + kHead + c.len);
            ahead_->recycle(std::move(c.data));
            if (chunk_) ahead_->recycle(std::move(chunk_));
            joined_ = std::move(joined);
            begin_ = pos_ = joined_.data();
            end_ = joined_.data() + joined_.size();
            base_ = newBase;
        }
        return {pos_, std::min(n, buffered())};
    }
    n = static_cast<size_t>(std::min<uint64_t>(n, remaining()));
    if (static_cast<size_t>(end_ - pos_) < n) refill(n);
    return {pos_, n};
}

size_t ByteReader::readSome(uint8_t* dst, size_t max) {
    if (buffered() == 0) {
        if (!ahead_ || (sizeKnown() && remaining() == 0)) return 0;
        const uint64_t newBase = offset();
        ReadAhead::Chunk c = ahead_->next();
        if (c.len == 0) return 0;
        if (chunk_) ahead_->recycle(std::move(chunk_));
        joined_ = {};
        chunk_ = std::move(c.data);
        begin_ = pos_ = chunk_.get() + kHead;
        end_ = pos_ + c.len;
        base_ = newBase;
    }
    const size_t n = std::min(max, buffered());
    std::memcpy(dst, pos_, n);
    pos_ += n;
    return n;
}

void ByteReader::refill(uint64_t n) {
    if (n > remaining() && !compressed())
        throw ParseError(size_, "file ends early (truncated?): " + std::to_string(n) + " more bytes needed at byte " +
                                    std::to_string(offset()) + ", only " + std::to_string(remaining()) + " left");
    if (!ahead_) throw ParseError(offset(), "internal: memory reader out of data");
    uint64_t newBase = offset();
    size_t keep = static_cast<size_t>(end_ - pos_);
    ReadAhead::Chunk c = ahead_->next();
    if (c.len == 0 && compressed()) endsEarly(n);
    if (keep > kHead || keep + c.len < n) {
        join(n, std::move(c.data), c.len);
    } else {  // the common case: the unread tail goes in front of the next chunk
        uint8_t* start = c.data.get() + kHead - keep;
        if (keep) std::memcpy(start, pos_, keep);
        if (chunk_) ahead_->recycle(std::move(chunk_));
        joined_ = {};
        chunk_ = std::move(c.data);
        begin_ = pos_ = start;
        end_ = chunk_.get() + kHead + c.len;
    }
    base_ = newBase;
}

void ByteReader::endsEarly(uint64_t n) const {
    throw ParseError(offset(), std::string("the ") + format_ + " data ends early (truncated?): " + std::to_string(n) +
                                   " more bytes needed at byte " + std::to_string(offset()) + " of the decompressed data");
}

// A value longer than a chunk (or a long unread tail): the bytes from pos_ on and as many chunks
// as it takes are joined in one buffer of their own.
void ByteReader::join(uint64_t n, std::unique_ptr<uint8_t[]> chunk, size_t len) {
    std::vector<uint8_t> joined(pos_, end_);
    for (;;) {
        if (len == 0) {
            if (compressed()) endsEarly(n);
            throw ParseError(offset() + joined.size(), "file shrank while being read");
        }
        joined.insert(joined.end(), chunk.get() + kHead, chunk.get() + kHead + len);
        ahead_->recycle(std::move(chunk));
        if (joined.size() >= n) break;
        ReadAhead::Chunk c = ahead_->next();
        chunk = std::move(c.data);
        len = c.len;
    }
    if (chunk_) ahead_->recycle(std::move(chunk_));
    joined_ = std::move(joined);
    begin_ = pos_ = joined_.data();
    end_ = joined_.data() + joined_.size();
}

} // namespace memlens::model
