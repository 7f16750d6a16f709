#include "memlens/model/PackedSeries.h"

#include "memlens/model/HugePages.h"

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
    bool narrow = true;
    for (size_t j = 0; j < count && narrow; ++j) {
        // the difference in 128 bits: values far apart must not wrap around into range
        const __int128 d = static_cast<__int128>(values[j]) - base;
        narrow = d >= std::numeric_limits<int32_t>::min() && d <= std::numeric_limits<int32_t>::max();
    }
    m_base[b] = base;
    int32_t* delta = m_delta.data() + b * kBlock;
    if (narrow) {
        for (size_t j = 0; j < count; ++j) delta[j] = static_cast<int32_t>(values[j] - base);
        return;
    }
    std::fill(delta, delta + count, 0);
    m_wide[b] = static_cast<uint32_t>(m_wideValues.size() / kBlock + 1);
    m_wideValues.insert(m_wideValues.end(), values, values + count);
    m_wideValues.resize(m_wideValues.size() + (kBlock - count), 0);
}

std::vector<int64_t> PackedSeries::toVector() const {
    std::vector<int64_t> out(m_size);
    scan(0, m_size, [&out](size_t i, int64_t v) { out[i] = v; });
    return out;
}

size_t PackedSeries::memoryBytes() const {
    return m_base.capacity() * sizeof(int64_t) + m_delta.capacity() * sizeof(int32_t) +
           m_wide.capacity() * sizeof(uint32_t) + m_wideValues.capacity() * sizeof(int64_t);
}

PackedSeries::BackwardWriter::BackwardWriter(size_t n) : m_next(n) {
    m_out.m_size = n;
    m_out.m_base.assign(blocksFor(n), 0);
    reserveHugePages(m_out.m_delta, n);
    m_out.m_delta.resize(n);
    m_out.m_wide.assign(blocksFor(n), 0);
}

void PackedSeries::BackwardWriter::flush() {
    // m_next is the first index of a block, whose values [m_next, min(n, m_next + kBlock)) are given
    const size_t b = m_next / kBlock;
    const size_t count = std::min(kBlock, m_out.m_size - m_next);
    m_out.setBlock(b, m_buffer, count);
}

PackedSeries PackedSeries::BackwardWriter::take() { return std::move(m_out); }

} // namespace memlens::model
