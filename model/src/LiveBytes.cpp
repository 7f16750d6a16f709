#include "memlens/model/LiveBytes.h"

#include <algorithm>
#include <limits>

namespace memlens::model {

LiveBytes::LiveBytes(const TraceColumns& trace, uint64_t liveAtEnd) : t_(trace), n_(trace.rows()) {
    const size_t blocks = (n_ + kBlock - 1) / kBlock;
    ends_.resize(blocks);
    maxes_.resize(blocks);
    int64_t cur = static_cast<int64_t>(liveAtEnd);
    for (size_t b = blocks; b-- > 0;) {
        ends_[b] = cur;
        int64_t m = cur;
        for (size_t i = end(b); i-- > b * kBlock;) {
            m = std::max(m, cur);  // cur: live after entry i
            cur -= delta(i);
        }
        maxes_[b] = m;
    }
    before_ = cur;
}

int64_t LiveBytes::delta(size_t i) const {
    const Action a = t_.action[i];
    if (a == Action::Alloc) return static_cast<int64_t>(t_.size[i]);
    if (a == Action::FreeRequested || a == Action::Free) return -static_cast<int64_t>(t_.size[i]);
    return 0;
}

int64_t LiveBytes::after(int64_t e) const {
    if (e < 0 || n_ == 0) return before_;
    const size_t i = std::min(static_cast<size_t>(e), n_ - 1);
    const size_t b = i / kBlock;
    if (i - b * kBlock < end(b) - 1 - i) {  // nearer the block's start: run forward from it
        int64_t v = start(b);
        for (size_t k = b * kBlock; k <= i; ++k) v += delta(k);
        return v;
    }
    int64_t v = ends_[b];  // else back from its end
    for (size_t k = end(b) - 1; k > i; --k) v -= delta(k);
    return v;
}

int64_t LiveBytes::maxIn(size_t first, size_t last) const {
    int64_t m = std::numeric_limits<int64_t>::min();
    const size_t firstBlock = first / kBlock, lastBlock = last / kBlock;
    if (firstBlock == lastBlock) {
        int64_t v = start(firstBlock);
        for (size_t k = firstBlock * kBlock; k <= last; ++k) {
            v += delta(k);
            if (k >= first) m = std::max(m, v);
        }
        return m;
    }
    // the first block's entries from first on, run back from its end
    int64_t v = ends_[firstBlock];
    for (size_t k = end(firstBlock); k-- > first;) {
        m = std::max(m, v);  // v: after entry k
        v -= delta(k);
    }
    for (size_t b = firstBlock + 1; b < lastBlock; ++b) m = std::max(m, maxes_[b]);
    // the last block's entries up to last, run forward from its start
    v = start(lastBlock);
    for (size_t k = lastBlock * kBlock; k <= last; ++k) {
        v += delta(k);
        m = std::max(m, v);
    }
    return m;
}

int64_t LiveBytes::max() const {
    int64_t m = std::numeric_limits<int64_t>::min();
    for (int64_t v : maxes_) m = std::max(m, v);
    return m;
}

} // namespace memlens::model
