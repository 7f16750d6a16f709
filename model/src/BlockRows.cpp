#include "BlockRows.h"

#include <cstdlib>
#include <new>

namespace memlens::model {

BlockRows::BlockRows(const PickleDocument& doc, const SnapshotKeys& keys) : fields_(doc), k_(keys) {}

void BlockRows::Free::operator()(Block* p) const { std::free(p); }

std::optional<uint32_t> BlockRows::fromItems(const Value* items, size_t n) {
    const Value *size = nullptr, *requested = nullptr, *state = nullptr, *address = nullptr, *frames = nullptr;
    for (size_t i = 0; i + 1 < n; i += 2) {
        const Value& k = items[i];
        if (k.tag != Tag::Str) return std::nullopt;
        const Value* v = &items[i + 1];
        if (k.ref == k_.size) size = v;  // the last of a repeated key wins, as in Python
        else if (k.ref == k_.requested_size) requested = v;
        else if (k.ref == k_.state) state = v;
        else if (k.ref == k_.address) address = v;
        else if (k.ref == k_.frames) frames = v;
        else return std::nullopt;  // 'history' (torch 2.0), or a key this reader does not know
    }
    if (!size || !state || !address || state->tag != Tag::Str || !address->isInt() ||
        !TreeFields::isNonNegativeInt(*size))
        return std::nullopt;
    Block b;
    b.size = size->bits;
    if (requested && requested->tag != Tag::None) {
        if (!TreeFields::isNonNegativeInt(*requested)) return std::nullopt;
        b.requestedSize = requested->bits;
    }
    const auto blockState = k_.blockState(state->ref);
    const auto stack = fields_.framesStack(frames);
    if (!blockState || !stack) return std::nullopt;
    b.state = *blockState;
    b.address = address->bits;
    b.stack = *stack;
    if (count_ == UINT32_MAX) return std::nullopt;
    if ((count_ & (kChunk - 1)) == 0) {
        constexpr size_t kBytes = size_t(kChunk) * sizeof(Block);
        auto* chunk = static_cast<Block*>(std::malloc(kBytes));
        if (!chunk) throw std::bad_alloc();
        chunks_.emplace_back(chunk);
    }
    chunks_.back()[count_ & (kChunk - 1)] = b;
    return count_++;
}

} // namespace memlens::model
