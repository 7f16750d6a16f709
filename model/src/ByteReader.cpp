#include "memlens/model/ByteReader.h"

#include "memlens/model/ParseError.h"

#include <cerrno>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

namespace memlens::model {

namespace {
constexpr size_t kChunk = 4 << 20;
}

ByteReader::ByteReader(const std::string& path) {
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) throw ParseError(ParseError::kNoOffset, std::string("cannot open: ") + std::strerror(errno));
    struct stat st {};
    if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
        ::close(fd_);
        fd_ = -1;
        throw ParseError(ParseError::kNoOffset, "not a regular file");
    }
    size_ = static_cast<uint64_t>(st.st_size);
#ifdef POSIX_FADV_SEQUENTIAL
    ::posix_fadvise(fd_, 0, 0, POSIX_FADV_SEQUENTIAL);
#endif
    buffer_.resize(std::min<uint64_t>(kChunk, std::max<uint64_t>(size_, 1)));
    begin_ = pos_ = end_ = buffer_.data();
}

ByteReader::ByteReader(std::span<const uint8_t> memory) : size_(memory.size()) {
    begin_ = pos_ = memory.data();
    end_ = memory.data() + memory.size();
}

ByteReader::~ByteReader() {
    if (fd_ >= 0) ::close(fd_);
}

std::span<const uint8_t> ByteReader::peek(size_t n) {
    n = static_cast<size_t>(std::min<uint64_t>(n, remaining()));
    if (static_cast<size_t>(end_ - pos_) < n) refill(n);
    return {pos_, n};
}

void ByteReader::refill(uint64_t n) {
    if (n > remaining())
        throw ParseError(size_, "file ends early (truncated?): " + std::to_string(n) + " more bytes needed at byte " +
                                    std::to_string(offset()) + ", only " + std::to_string(remaining()) + " left");
    if (fd_ < 0) throw ParseError(offset(), "internal: memory reader out of data");
    // keep the unread tail, then read more behind it
    size_t keep = static_cast<size_t>(end_ - pos_);
    uint64_t newBase = offset();
    if (buffer_.size() < n) buffer_.resize(static_cast<size_t>(std::max<uint64_t>(n, kChunk)));
    std::memmove(buffer_.data(), pos_, keep);
    size_t have = keep;
    size_t want = static_cast<size_t>(std::min<uint64_t>(buffer_.size(), size_ - newBase));
    while (have < want) {
        ssize_t r = ::read(fd_, buffer_.data() + have, want - have);
        if (r < 0) {
            if (errno == EINTR) continue;
            throw ParseError(newBase + have, std::string("read failed: ") + std::strerror(errno));
        }
        if (r == 0) break;
        have += static_cast<size_t>(r);
    }
    if (have < n) throw ParseError(newBase + have, "file shrank while being read");
    base_ = newBase;
    begin_ = pos_ = buffer_.data();
    end_ = buffer_.data() + have;
}

} // namespace memlens::model
