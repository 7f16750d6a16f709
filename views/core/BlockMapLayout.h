#pragma once
// Geometry of the block map, without a window: the segments of a device state laid end to end
// in address order, wrapped into rows of a given pixel width and scaled by bytes per pixel.
// Every block is a rectangle at least one pixel wide; blocks below a pixel are merged into one
// rectangle of the state that holds most of their bytes, so a pixel column is never drawn twice.
#include "core/PixelRect.h"
#include "memlens/model/AllocatorState.h"

#include <cstdint>
#include <optional>
#include <vector>

namespace memlens::views {

struct BlockMapParams {
    int width = 800;        // pixels per row
    int rowHeight = 20;
    int rowGap = 6;         // between rows
    int segmentGap = 3;     // empty pixels between two segments on a row
    double bytesPerPixel = 0;  // 0: the smallest scale at which everything fits in fitHeight
    int fitHeight = 400;
};

struct BlockMapRect {
    PixelRect rect;                 // one row's piece of a block (a block may wrap onto the next row)
    uint32_t segment = 0;       // index into DeviceState::segments
    uint32_t firstBlock = 0;    // blocks [firstBlock, firstBlock + blockCount) of that segment
    uint32_t blockCount = 1;    // more than one: blocks below a pixel, merged
    uint32_t block = 0;         // the one it stands for: the biggest block of the dominant state
    model::StateBlockKind kind = model::StateBlockKind::Free;  // the state with the most bytes
    bool estimated = false;     // that block's size was estimated from the trace
    bool merged() const { return blockCount > 1; }
};

struct BlockMapSegmentPiece {
    PixelRect rect;                 // one row's piece of a segment
    uint32_t segment = 0;
    bool first = false;         // the piece with the segment's start
    bool last = false;          // the piece with its end
};

class BlockMapLayout {
public:
    BlockMapLayout() = default;
    BlockMapLayout(const model::DeviceState& state, const BlockMapParams& params);

    // The smallest bytes-per-pixel (largest drawing) at which the state fits in params.fitHeight.
    static double fitBytesPerPixel(const model::DeviceState& state, const BlockMapParams& params);

    double bytesPerPixel() const { return m_bytesPerPixel; }
    int width() const { return m_params.width; }
    int height() const;  // of all rows, without a trailing gap
    int rows() const { return m_rows; }
    const BlockMapParams& params() const { return m_params; }

    const std::vector<BlockMapRect>& rects() const { return m_rects; }  // in address order
    const std::vector<BlockMapSegmentPiece>& segmentPieces() const { return m_pieces; }
    int segmentPixels(uint32_t segment) const { return m_segmentPixels[segment]; }

    // The rectangle under a point, if any (gaps between rows and segments have none).
    const BlockMapRect* rectAt(PixelPoint p) const;
    // Every rectangle showing block `block` of segment `segment` (its own pieces, or the merged
    // rectangle it went into).
    std::vector<const BlockMapRect*> rectsOf(uint32_t segment, uint32_t block) const;
    // The state's largest free block as (segment, block), if it has a free block.
    std::optional<std::pair<uint32_t, uint32_t>> largestFreeBlock() const { return m_largestFree; }

private:
    void build(const model::DeviceState& state);
    void emitRect(const BlockMapRect& proto, int64_t from, int64_t to);

    BlockMapParams m_params;
    double m_bytesPerPixel = 1;
    int m_rows = 0;
    std::vector<BlockMapRect> m_rects;
    std::vector<int64_t> m_rectStart;  // global pixel (row * width + x) of each rect, ascending
    std::vector<BlockMapSegmentPiece> m_pieces;
    std::vector<int> m_segmentPixels;
    std::optional<std::pair<uint32_t, uint32_t>> m_largestFree;
};

} // namespace memlens::views
