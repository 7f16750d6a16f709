#pragma once
// Words for one block of the block map: a tooltip with its address, sizes, state, the entry that
// allocated it and the top of its stack; and the one-line description the document keeps for a
// selected allocation.
#include "memlens/model/AllocatorState.h"
#include "memlens/model/Snapshot.h"
#include "core/BlockMapLayout.h"

#include <QString>

namespace memlens::views {

// "allocated", "allocated before recording", "pending free", "free"
QString blockKindLabel(model::StateBlockKind kind);
// "0x7f3a00000000"
QString hexAddress(uint64_t address);
// "5 MiB block at 0x7f3a00000000, allocated at entry #123"
QString blockSummary(const model::StateBlock& block);
// Rich text for a tooltip; `maxRows` rows of the folded stack at most. `rect` says whether the
// block stands for several merged ones.
QString blockTooltip(const model::Snapshot* snapshot, const model::StateSegment& segment, const BlockMapRect& rect,
                     int maxRows = 8);
// The top rows of a stack as rich text lines (folded runs in grey), "" for an empty stack.
QString stackExcerptHtml(const model::Snapshot& snapshot, model::StackId stack, int maxRows);

} // namespace memlens::views
