#include "memlens/model/PackedSeries.h"


#include <algorithm>
#include <limits>

namespace memlens::model {

namespace {

size_t blocksFor(size_t n) { return (n + PackedSeries::kBlock - 1) / PackedSeries::kBlock; }

} // namespace

PackedSeries::PackedSeries(std::span<const int64_t> values) {
    BackwardWriter w(values.size());
    for (size_t i = values.size(); i-- > 0;) w.push(values[i]);
    *this = w.take();
}

void PackedSeries::setBlock(size_t b, const int64_t* values, size_t count) {
    const int64_t base = values[0];
    int64_t least = base, greatest = base;  // in 64 bits, a loop the compiler vectorises
    for (size_t j = 1; j < count; ++j) {
        least = std::min(least, values[j]);
        greatest = std::max(greatest, values[j]);
    }
    // the differences' range in 128 bits: values far apart must not wrap around into range
    const __int128 lo = static_cast<__int128>(least) - base, hi = static_cast<__int128>(greatest) - base;
    const auto fits = [lo, hi](auto type) {
        using T = decltype(type);
        return lo >= std::numeric_limits<T>::min() && hi <= std::numeric_limits<T>::max();
    };
    const size_t width = lo == 0 && hi == 0 ? 0 : fits(int8_t{}) ? 1 : fits(int16_t{}) ? 2 : fits(int32_t{}) ? 4 : 8;
    m_base[b] = base;
    const size_t offset = m_bytes.size();
    m_blocks[b] = descriptor(offset, width);
    if (width == 0) return;
    m_bytes.resize(offset + kBlock * width);  // a short last block is padded
    uint8_t* out = m_bytes.data() + offset;
    const auto put = [&](auto type) {
        using T = decltype(type);
        for (size_t j = 0; j < count; ++j) {
            // modulo 2^64: exact for 8-byte differences of values more than 2^63 apart
            const T d = static_cast<T>(static_cast<uint64_t>(values[j]) - static_cast<uint64_t>(base));
            std::memcpy(out + j * sizeof(T), &d, sizeof(T));
        }
    };
    switch (width) {
    case 1: put(int8_t{}); break;
    case 2: put(int16_t{}); break;
    case 4: put(int32_t{}); break;
    default: put(int64_t{}); break;
    }
}

size_t PackedSeries::wideBlocks() const {
    return static_cast<size_t>(std::count_if(m_blocks.begin(), m_blocks.end(), [](uint64_t b) { return widthOf(b) == 8; }));
}

size_t PackedSeries::constantBlocks() const {
    return static_cast<size_t>(std::count_if(m_blocks.begin(), m_blocks.end(), [](uint64_t b) { return widthOf(b) == 0; }));
}

std::vector<int64_t> PackedSeries::toVector() const {
    std::vector<int64_t> out(m_size);
    scan(0, m_size, [&out](size_t i, int64_t v) { out[i] = v; });
    return out;
}

size_t PackedSeries::memoryBytes() const {
    // m_bytes is reserved for 4 bytes a value (BackwardWriter): its pages beyond what is written
    // are never touched, so they take no memory
    return m_base.capacity() * sizeof(int64_t) + m_blocks.capacity() * sizeof(uint64_t) + m_bytes.size();
}

PackedSeries::BlockExtremes PackedSeries::blockExtremes(size_t b) const {
    const size_t first = b * kBlock;
    BlockExtremes r{m_base[b], m_base[b], first};  // the base is the block's first value
    if (widthOf(m_blocks[b]) == 0) return r;       // one value: nothing to read
    scan(first + 1, std::min(m_size, first + kBlock), [&r](size_t i, int64_t v) {
        r.min = std::min(r.min, v);
        if (v > r.max) {
            r.max = v;
            r.maxIndex = i;
        }
    });
    return r;
}

PackedSeries::BackwardWriter::BackwardWriter(size_t n) : m_next(n) {
    m_out.m_size = n;
    m_out.m_base.assign(blocksFor(n), 0);
    m_out.m_blocks.assign(blocksFor(n), 0);
    // address space for 4 bytes a value (the live bytes' usual width); only what is written is
    // backed by memory. More (blocks of 8-byte differences) grows it.
    m_out.m_bytes.reserve(blocksFor(n) * kBlock * 4);
}

void PackedSeries::BackwardWriter::flush() {
    // m_next is the first index of a block, whose values [m_next, min(n, m_next + kBlock)) are given
    const size_t b = m_next / kBlock;
    const size_t count = std::min(kBlock, m_out.m_size - m_next);
    m_out.setBlock(b, m_buffer, count);
}

PackedSeries PackedSeries::BackwardWriter::take() { return std::move(m_out); }

} // namespace memlens::model
