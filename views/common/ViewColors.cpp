#include "common/ViewColors.h"

#include <QPainter>
#include <QPixmap>

#include <array>

namespace memlens::views::colors {

QColor blockKind(model::StateBlockKind kind) {
    switch (kind) {
    case model::StateBlockKind::Allocated: return QColor(0x3f, 0x74, 0xb5);
    case model::StateBlockKind::BeforeRecording: return QColor(0x8e, 0xa9, 0xd3);
    case model::StateBlockKind::PendingFree: return QColor(0xf0, 0x8c, 0x2e);
    case model::StateBlockKind::Free: return QColor(0xe6, 0xe6, 0xe6);
    }
    return Qt::gray;
}

QColor breakdownPart(model::BreakdownPart part) {
    using P = model::BreakdownPart;
    switch (part) {
    case P::LiveTensors: return blockKind(model::StateBlockKind::Allocated);
    case P::Rounding: return QColor(0x9c, 0xc3, 0xe6);
    case P::PendingFree: return blockKind(model::StateBlockKind::PendingFree);
    case P::FragmentedFree: return QColor(0xdc, 0x5a, 0x5a);
    case P::ReleasableFree: return QColor(0xb8, 0xb8, 0xb8);
    case P::CudaContext: return QColor(0x5a, 0xa6, 0x9e);
    case P::OutsidePyTorch: return QColor(0xe6, 0xc2, 0x4a);
    case P::Unexplained: return QColor(0xc9, 0xa6, 0xcf);
    }
    return Qt::gray;
}

QColor frameKind(model::FrameKind kind) {
    switch (kind) {
    case model::FrameKind::User: return QColor(0x2e, 0x8b, 0x3e);
    case model::FrameKind::Library: return QColor(0x5c, 0x6b, 0xc0);
    case model::FrameKind::Native: return QColor(0x9a, 0x9a, 0x9a);
    }
    return Qt::gray;
}

QColor estimatedHatch() { return QColor(255, 255, 255, 110); }
QColor largestFreeOutline() { return QColor(0xd6, 0x27, 0x28); }
QColor markedOutline() { return QColor(0xc0, 0x26, 0xd3); }
QColor expandableSegment() { return QColor(0x1b, 0x9e, 0x9e); }
QColor regularSegment() { return QColor(0x80, 0x80, 0x80); }
QColor privatePoolSegment() { return QColor(0x8c, 0x56, 0x4b); }
QColor oomBackground() { return QColor(0xfd, 0xe8, 0xe8); }
QColor oomText() { return QColor(0x9b, 0x1c, 0x1c); }

QIcon frameKindIcon(model::FrameKind kind) {
    static std::array<QIcon, 3> cache;
    QIcon& icon = cache[static_cast<size_t>(kind)];
    if (icon.isNull()) {
        QPixmap pm(12, 12);
        pm.fill(Qt::transparent);
        QPainter p(&pm);
        p.setRenderHint(QPainter::Antialiasing);
        p.setPen(Qt::NoPen);
        p.setBrush(frameKind(kind));
        if (kind == model::FrameKind::Native)
            p.drawRect(QRectF(2.5, 2.5, 7, 7));  // native frames: a square
        else
            p.drawEllipse(QRectF(1.5, 1.5, 9, 9));
        p.end();
        icon = QIcon(pm);
    }
    return icon;
}

} // namespace memlens::views::colors
