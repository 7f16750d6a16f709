#include "core/BlockMapLayout.h"

#include <algorithm>
#include <array>
#include <cmath>

namespace memlens::views {

using model::StateBlockKind;

namespace {

struct Placement {
    std::vector<int64_t> start;  // global pixel of each segment's first column
    std::vector<int> pixels;
    int rows = 0;
};

int64_t segmentPixelsFor(uint64_t bytes, double bpp) {
    return std::max<int64_t>(1, std::llround(static_cast<double>(bytes) / bpp));
}

// Segments end to end, a gap between two on the same row; a segment that fits on a row but not
// in what is left of the current one starts the next row.
Placement place(const model::DeviceState& st, const BlockMapParams& p, double bpp, bool keep) {
    Placement out;
    const int64_t W = p.width;
    int64_t cursor = 0;
    for (const auto& seg : st.segments) {
        const int64_t px = segmentPixelsFor(seg.totalSize, bpp);
        if (cursor % W != 0) {
            if (cursor % W + p.segmentGap >= W)
                cursor = (cursor / W + 1) * W;
            else
                cursor += p.segmentGap;
        }
        const int64_t x = cursor % W;
        if (px <= W && x + px > W) cursor = (cursor / W + 1) * W;
        if (keep) {
            out.start.push_back(cursor);
            out.pixels.push_back(static_cast<int>(std::min<int64_t>(px, INT32_MAX)));
        }
        cursor += px;
    }
    out.rows = static_cast<int>((cursor + W - 1) / W);
    return out;
}

// Local pixel columns [s, e) of a run of blocks [first, first + count) of one segment.
struct Local {
    int64_t s, e;
    uint32_t first, count;
};

int kindRank(StateBlockKind k) {  // ties between states go to the more telling one
    switch (k) {
    case StateBlockKind::Allocated: return 3;
    case StateBlockKind::PendingFree: return 2;
    case StateBlockKind::BeforeRecording: return 1;
    case StateBlockKind::Free: return 0;
    }
    return 0;
}

} // namespace

double BlockMapLayout::fitBytesPerPixel(const model::DeviceState& st, const BlockMapParams& params) {
    BlockMapParams p = params;
    p.width = std::max(1, p.width);
    uint64_t total = 0;
    for (const auto& s : st.segments) total += s.totalSize;
    if (total == 0) return 1.0;
    const int pitch = std::max(1, p.rowHeight + p.rowGap);
    const int rowsAvailable = std::max(1, (p.fitHeight + p.rowGap) / pitch);
    // The first of bpp0, bpp0 * 1.05, bpp0 * 1.05^2, ... (200 steps at most) whose layout fits the
    // height. Rows only shrink as bytes per pixel grow, so a binary search over the steps finds
    // it with 8 layouts instead of up to 200: a state of 40,000 segments, which never fits (each
    // takes a pixel and a gap), took 200 layouts and 80 ms at every resize.
    constexpr int kSteps = 200;
    std::array<double, kSteps + 1> bpp{};
    bpp[0] = std::max(1.0 / 64, static_cast<double>(total) / (static_cast<double>(rowsAvailable) * p.width));
    for (int i = 1; i <= kSteps; ++i) bpp[i] = bpp[i - 1] * 1.05;
    const auto fits = [&](int i) { return place(st, p, bpp[i], false).rows <= rowsAvailable; };
    if (fits(0)) return bpp[0];
    if (!fits(kSteps - 1)) return bpp[kSteps];
    int lo = 0, hi = kSteps - 1;  // lo does not fit, hi does
    while (hi - lo > 1) {
        const int mid = (lo + hi) / 2;
        (fits(mid) ? hi : lo) = mid;
    }
    return bpp[hi];
}

BlockMapLayout::BlockMapLayout(const model::DeviceState& state, const BlockMapParams& params) : m_params(params) {
    m_params.width = std::max(1, m_params.width);
    m_params.rowHeight = std::max(1, m_params.rowHeight);
    m_params.rowGap = std::max(0, m_params.rowGap);
    m_params.segmentGap = std::max(0, m_params.segmentGap);
    m_bytesPerPixel = m_params.bytesPerPixel > 0 ? m_params.bytesPerPixel : fitBytesPerPixel(state, m_params);
    build(state);
}

int BlockMapLayout::height() const {
    return m_rows == 0 ? 0 : m_rows * m_params.rowHeight + (m_rows - 1) * m_params.rowGap;
}

void BlockMapLayout::emitRect(const BlockMapRect& proto, int64_t from, int64_t to) {
    const int64_t W = m_params.width;
    const int pitch = m_params.rowHeight + m_params.rowGap;
    while (from < to) {
        const int64_t row = from / W;
        const int64_t end = std::min(to, (row + 1) * W);
        BlockMapRect r = proto;
        r.rect = PixelRect(static_cast<int>(from - row * W), static_cast<int>(row * pitch), static_cast<int>(end - from),
                       m_params.rowHeight);
        m_rects.push_back(r);
        m_rectStart.push_back(from);
        from = end;
    }
}

void BlockMapLayout::build(const model::DeviceState& st) {
    const Placement pl = place(st, m_params, m_bytesPerPixel, true);
    m_rows = pl.rows;
    m_segmentPixels = pl.pixels;
    const int64_t W = m_params.width;
    const int pitch = m_params.rowHeight + m_params.rowGap;

    uint64_t largest = 0;
    std::vector<Local> locals;
    for (uint32_t si = 0; si < st.segments.size(); ++si) {
        const auto& seg = st.segments[si];
        const int64_t segStart = pl.start[si];
        const int64_t segPx = pl.pixels[si];

        // the segment's pieces, one per row it touches
        for (int64_t from = segStart, to = segStart + segPx; from < to;) {
            const int64_t row = from / W;
            const int64_t end = std::min(to, (row + 1) * W);
            BlockMapSegmentPiece piece;
            piece.rect = PixelRect(static_cast<int>(from - row * W), static_cast<int>(row * pitch),
                               static_cast<int>(end - from), m_params.rowHeight);
            piece.segment = si;
            piece.first = from == segStart;
            piece.last = end == to;
            m_pieces.push_back(piece);
            from = end;
        }

        // Pixel columns. A block at least a pixel wide gets [round(start), round(end)). A run of
        // narrower blocks covers [round(run start), round(run end)); each of those columns becomes
        // one rectangle of the blocks whose middle falls in it. A run that rounds to no column at
        // all takes one from a neighbour at least two columns wide, or else joins that
        // neighbour's single column.
        const double scale = seg.totalSize ? static_cast<double>(segPx) / static_cast<double>(seg.totalSize) : 0.0;
        auto real = [&](uint64_t address) {
            const uint64_t off = address > seg.address ? std::min(address - seg.address, seg.totalSize) : 0;
            return static_cast<double>(off) * scale;
        };
        auto col = [&](double x) { return std::clamp<int64_t>(std::llround(x), 0, segPx); };
        auto midColumn = [&](const model::StateBlock& k, int64_t lo, int64_t hi) {
            const double mid = (real(k.address) + real(k.address + k.size)) / 2;
            return std::clamp<int64_t>(static_cast<int64_t>(std::floor(mid)), lo, hi);
        };
        locals.clear();
        std::optional<Local> pending;  // a run that rounds to no column, waiting for its next neighbour
        const uint32_t nb = static_cast<uint32_t>(seg.blocks.size());
        for (uint32_t bi = 0; bi < nb;) {
            const auto& b = seg.blocks[bi];
            if (b.kind == StateBlockKind::Free && b.size > largest) {
                largest = b.size;
                m_largestFree = std::make_pair(si, bi);
            }
            const double ra = real(b.address), rb = real(b.address + b.size);
            if (rb - ra >= 1.0) {
                Local cur{col(ra), col(rb), bi, 1};
                if (pending) {
                    if (cur.e - cur.s >= 2) {
                        locals.push_back(Local{cur.s, cur.s + 1, pending->first, pending->count});
                        ++cur.s;
                    } else if (!locals.empty() && locals.back().e == cur.s && locals.back().e - locals.back().s >= 2) {
                        --locals.back().e;
                        locals.push_back(Local{cur.s - 1, cur.s, pending->first, pending->count});
                    } else {
                        cur.first = pending->first;
                        cur.count += pending->count;
                    }
                    pending.reset();
                }
                locals.push_back(cur);
                ++bi;
                continue;
            }
            // a run of blocks below a pixel
            uint32_t bj = bi;
            while (bj < nb) {
                const auto& k = seg.blocks[bj];
                if (real(k.address + k.size) - real(k.address) >= 1.0) break;
                if (k.kind == StateBlockKind::Free && k.size > largest) {
                    largest = k.size;
                    m_largestFree = std::make_pair(si, bj);
                }
                ++bj;
            }
            const auto& lastBlock = seg.blocks[bj - 1];
            const int64_t cs = col(ra), ce = col(real(lastBlock.address + lastBlock.size));
            if (ce <= cs) {
                pending = Local{cs, cs, bi, bj - bi};
            } else {
                for (uint32_t k = bi; k < bj;) {
                    const int64_t c = midColumn(seg.blocks[k], cs, ce - 1);
                    uint32_t m = k + 1;
                    while (m < bj && midColumn(seg.blocks[m], cs, ce - 1) == c) ++m;
                    if (k == bi) {
                        locals.push_back(Local{cs, ce, k, m - k});
                    } else {
                        locals.back().e = c;  // the previous column group ends where this one starts
                        locals.push_back(Local{c, ce, k, m - k});
                    }
                    k = m;
                }
            }
            bi = bj;
        }
        if (pending) {
            if (locals.empty()) {
                locals.push_back(Local{0, segPx, pending->first, pending->count});
            } else if (locals.back().e - locals.back().s >= 2) {
                --locals.back().e;
                locals.push_back(Local{locals.back().e, locals.back().e + 1, pending->first, pending->count});
            } else {
                locals.back().count += pending->count;
            }
        }

        for (const Local& l : locals) {
            BlockMapRect proto;
            proto.segment = si;
            proto.firstBlock = l.first;
            proto.blockCount = l.count;
            std::array<uint64_t, 4> bytes{};
            for (uint32_t k = l.first; k < l.first + l.count; ++k)
                bytes[static_cast<size_t>(seg.blocks[k].kind)] += seg.blocks[k].size;
            size_t best = 0;
            for (size_t k = 1; k < bytes.size(); ++k) {
                const auto kk = static_cast<StateBlockKind>(k), kb = static_cast<StateBlockKind>(best);
                if (bytes[k] > bytes[best] || (bytes[k] == bytes[best] && kindRank(kk) > kindRank(kb))) best = k;
            }
            proto.kind = static_cast<StateBlockKind>(best);
            uint64_t repSize = 0;
            proto.block = l.first;
            for (uint32_t k = l.first; k < l.first + l.count; ++k)
                if (seg.blocks[k].kind == proto.kind && seg.blocks[k].size > repSize) {
                    repSize = seg.blocks[k].size;
                    proto.block = k;
                }
            proto.estimated = seg.blocks[proto.block].sizeEstimated;
            emitRect(proto, segStart + l.s, segStart + l.e);
        }
    }
}

const BlockMapRect* BlockMapLayout::rectAt(PixelPoint p) const {
    const int pitch = m_params.rowHeight + m_params.rowGap;
    if (p.x < 0 || p.x >= m_params.width || p.y < 0) return nullptr;
    const int64_t row = p.y / pitch;
    if (p.y - row * pitch >= m_params.rowHeight || row >= m_rows) return nullptr;
    const int64_t g = row * m_params.width + p.x;
    auto it = std::upper_bound(m_rectStart.begin(), m_rectStart.end(), g);
    if (it == m_rectStart.begin()) return nullptr;
    const auto& r = m_rects[static_cast<size_t>(it - m_rectStart.begin() - 1)];
    return r.rect.contains(p) ? &r : nullptr;
}

std::vector<const BlockMapRect*> BlockMapLayout::rectsOf(uint32_t segment, uint32_t block) const {
    std::vector<const BlockMapRect*> out;
    auto it = std::lower_bound(m_rects.begin(), m_rects.end(), segment,
                               [](const BlockMapRect& r, uint32_t s) { return r.segment < s; });
    for (; it != m_rects.end() && it->segment == segment; ++it)
        if (block >= it->firstBlock && block < it->firstBlock + it->blockCount) out.push_back(&*it);
    return out;
}

} // namespace memlens::views
