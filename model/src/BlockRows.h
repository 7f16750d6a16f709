#pragma once
// Internal to the snapshot reader.
#include "SnapshotKeys.h"
#include "TreeFields.h"

#include "memlens/model/PickleDocument.h"
#include "memlens/model/Snapshot.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

namespace memlens::model {

// The blocks of a snapshot's segments as they are read: a block dict (size, requested_size,
// state, address, frames; torch 2.1 and later) becomes a Block as soon as it is complete, so
// that a file of half a million blocks does not keep half a million generic dicts until its
// tree is read. A dict that is anything else, or a block the reader would name as a mistake
// (a bad state, a negative size, an unknown key), is left as it is: SnapshotTree reads it and
// says what is wrong with it, and where.
class BlockRows {
public:
    BlockRows(const PickleDocument& doc, const SnapshotKeys& keys);

    // The block of a dict's keys and values (items: key, value, key, value ...); nullopt when
    // they are not one.
    std::optional<uint32_t> fromItems(const Value* items, size_t n);
    const Block& operator[](uint32_t i) const { return chunks_[i >> kChunkBits][i & (kChunk - 1)]; }

private:
    // Chunks of 65,536 blocks (2 MiB): growing never copies the blocks read so far. Allocated
    // uninitialised (malloc, not new Block[]): a chunk's pages are touched only as blocks fill it.
    static constexpr uint32_t kChunkBits = 16, kChunk = uint32_t(1) << kChunkBits;
    struct Free {
        void operator()(Block* p) const;
    };
    TreeFields fields_;  // what the tree accepts
    const SnapshotKeys& k_;
    std::vector<std::unique_ptr<Block[], Free>> chunks_;
    uint32_t count_ = 0;
};

} // namespace memlens::model
