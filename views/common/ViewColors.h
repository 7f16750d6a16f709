#pragma once
// The colours the memory views share, so a block state, a breakdown part or a kind of frame
// looks the same wherever it appears.
#include "memlens/model/AllocatorState.h"
#include "memlens/model/FrameClassification.h"
#include "memlens/model/MemoryBreakdown.h"

#include <QColor>
#include <QIcon>

namespace memlens::views::colors {

QColor blockKind(model::StateBlockKind kind);
QColor breakdownPart(model::BreakdownPart part);
QColor frameKind(model::FrameKind kind);

QColor estimatedHatch();       // hatching over blocks whose size was estimated
QColor largestFreeOutline();   // the largest free block's outline
QColor markedOutline();        // blocks held by the selected retained graph
QColor expandableSegment();    // the stripe over expandable segments
QColor regularSegment();       // the stripe over cudaMalloc segments
QColor privatePoolSegment();   // the stripe over segments of a private pool (CUDA graphs, MemPool)
QColor oomBackground();
QColor oomText();

// A small filled circle in the frame kind's colour, for item views (cached).
QIcon frameKindIcon(model::FrameKind kind);

} // namespace memlens::views::colors
