#include "blockmap/BlockMapCanvas.h"

#include "blockmap/BlockDescription.h"
#include "common/ViewColors.h"

#include <QHelpEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QTimer>
#include <QToolTip>
#include <QWheelEvent>

#include <algorithm>
#include <cmath>

namespace memlens::views {

namespace {
constexpr int kStripe = 3;     // segment stripe at the top of each row
constexpr int kStripeGap = 1;  // between the stripe and the blocks
constexpr int kMargin = 2;     // around the map, so outlines are not clipped
// A widget position in the layout's coordinates.
PixelPoint layoutPoint(QPoint p) { return {p.x() - kMargin, p.y() - kMargin}; }
}

BlockMapCanvas::BlockMapCanvas(QWidget* parent) : QWidget(parent) {
    setMouseTracking(true);
    setAttribute(Qt::WA_OpaquePaintEvent);
    setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Preferred);
}

void BlockMapCanvas::setState(std::shared_ptr<const model::DeviceState> state,
                              std::shared_ptr<const model::Snapshot> snapshot) {
    m_state = std::move(state);
    m_snapshot = std::move(snapshot);
    findMarkedBlocks();
    relayout();
}

void BlockMapCanvas::setMarkedAddresses(std::vector<uint64_t> addresses) {
    m_marked = std::move(addresses);
    findMarkedBlocks();
    update();
}

void BlockMapCanvas::findMarkedBlocks() {
    m_markedBlocks.clear();
    if (!m_state || m_marked.empty()) return;
    for (uint32_t s = 0; s < m_state->segments.size(); ++s) {
        const auto& seg = m_state->segments[s];
        for (uint32_t b = 0; b < seg.blocks.size(); ++b) {
            const auto& block = seg.blocks[b];
            if (block.kind == model::StateBlockKind::Free) continue;
            const auto it = std::lower_bound(m_marked.begin(), m_marked.end(), block.address);
            if (it != m_marked.end() && *it < block.address + block.size) m_markedBlocks.emplace_back(s, b);
        }
    }
}

void BlockMapCanvas::setFitHeight(int height) {
    height = std::max(40, height);
    if (height == m_fitHeight) return;
    m_fitHeight = height;
    relayout();
}

void BlockMapCanvas::setZoom(double zoom) {
    zoom = std::clamp(zoom, 1.0, 4096.0);
    if (zoom == m_zoom) return;
    m_zoom = zoom;
    relayout();
    emit zoomChanged(m_zoom);
}

void BlockMapCanvas::setSelectedAddress(std::optional<uint64_t> address) {
    if (address == m_selectedAddress) return;
    m_selectedAddress = address;
    update();
}

QSize BlockMapCanvas::sizeHint() const { return QSize(600, m_layout.height() + 2 * kMargin); }
QSize BlockMapCanvas::minimumSizeHint() const { return QSize(100, m_layout.height() + 2 * kMargin); }

void BlockMapCanvas::relayout() {
    m_hover = nullptr;  // points into the layout
    m_layoutStale = true;
    update();
    if (m_layoutQueued) return;
    m_layoutQueued = true;
    QTimer::singleShot(0, this, [this] {
        m_layoutQueued = false;
        if (isVisible()) ensureLayout();  // a hidden map is laid out when it is painted
    });
}

void BlockMapCanvas::ensureLayout() {
    if (!m_layoutStale) return;
    m_layoutStale = false;
    BlockMapParams p;
    p.width = std::max(1, width() - 2 * kMargin);
    p.rowHeight = 22;
    p.rowGap = 6;
    p.segmentGap = 3;
    p.fitHeight = m_fitHeight - 2 * kMargin;
    if (m_state) {
        if (m_zoom > 1.0) p.bytesPerPixel = BlockMapLayout::fitBytesPerPixel(*m_state, p) / m_zoom;
        m_layout = BlockMapLayout(*m_state, p);
    } else {
        m_layout = BlockMapLayout();
    }
    const int h = m_layout.height() + 2 * kMargin;
    if (minimumHeight() != h) setMinimumHeight(h);
    updateGeometry();
    update();
    emit layoutChanged();
}

void BlockMapCanvas::resizeEvent(QResizeEvent* event) {
    QWidget::resizeEvent(event);
    if (m_layoutStale || m_layout.width() != std::max(1, width() - 2 * kMargin)) relayout();
}

std::optional<std::pair<uint32_t, uint32_t>> BlockMapCanvas::selectedBlock() const {
    if (!m_selectedAddress || !m_state) return std::nullopt;
    for (uint32_t s = 0; s < m_state->segments.size(); ++s) {
        const auto& seg = m_state->segments[s];
        if (*m_selectedAddress < seg.address || *m_selectedAddress >= seg.address + seg.totalSize) continue;
        for (uint32_t b = 0; b < seg.blocks.size(); ++b)
            if (seg.blocks[b].address == *m_selectedAddress) return std::make_pair(s, b);
    }
    return std::nullopt;
}

void BlockMapCanvas::outline(QPainter& p, uint32_t segment, uint32_t block, const QColor& color, int width) const {
    QPen pen(color, width);
    pen.setJoinStyle(Qt::MiterJoin);
    p.setPen(pen);
    p.setBrush(Qt::NoBrush);
    const double inset = width / 2.0;
    for (const BlockMapRect* r : m_layout.rectsOf(segment, block)) {
        QRectF body(r->rect.x(), r->rect.y() + kStripe + kStripeGap, r->rect.width(),
                    r->rect.height() - kStripe - kStripeGap);
        body.adjust(inset - width, inset - width, width - inset, width - inset);  // around the block
        p.drawRect(body);
    }
}

void BlockMapCanvas::paintEvent(QPaintEvent*) {
    ensureLayout();
    QPainter p(this);
    p.fillRect(rect(), palette().base());
    if (!m_state) return;
    p.translate(kMargin, kMargin);

    for (const auto& piece : m_layout.segmentPieces()) {
        const auto& seg = m_state->segments[piece.segment];
        p.fillRect(QRect(piece.rect.x(), piece.rect.y(), piece.rect.width(), kStripe),
                   !seg.pool.isDefault() ? colors::privatePoolSegment()
                   : seg.isExpandable    ? colors::expandableSegment()
                                         : colors::regularSegment());
    }
    const QColor separator(255, 255, 255, 170);
    for (const auto& r : m_layout.rects()) {
        const QRect body(r.rect.x(), r.rect.y() + kStripe + kStripeGap, r.rect.width(),
                         r.rect.height() - kStripe - kStripeGap);
        const QColor c = colors::blockKind(r.kind);
        p.fillRect(body, c);
        if (r.estimated && r.kind != model::StateBlockKind::Free) p.fillRect(body, QBrush(colors::estimatedHatch(), Qt::BDiagPattern));
        // a thin light line where one block follows another, so neighbours stay apart
        if (body.width() >= 4 && r.rect.x() > 0 && r.firstBlock > 0 && r.kind != model::StateBlockKind::Free)
            p.fillRect(QRect(body.x(), body.y(), 1, body.height()), separator);
    }

    if (auto lf = m_layout.largestFreeBlock()) outline(p, lf->first, lf->second, colors::largestFreeOutline(), 2);
    for (const auto& [segment, block] : m_markedBlocks) outline(p, segment, block, colors::markedOutline(), 2);
    if (auto sel = selectedBlock()) outline(p, sel->first, sel->second, palette().color(QPalette::Text), 2);
    if (m_hover) outline(p, m_hover->segment, m_hover->block, palette().color(QPalette::Highlight), 1);
}

void BlockMapCanvas::mouseMoveEvent(QMouseEvent* event) {
    const BlockMapRect* r = layout().rectAt(layoutPoint(event->position().toPoint()));
    if (r != m_hover) {
        m_hover = r;
        setCursor(r && r->kind != model::StateBlockKind::Free ? Qt::PointingHandCursor : Qt::ArrowCursor);
        update();
    }
}

void BlockMapCanvas::leaveEvent(QEvent*) {
    if (m_hover) {
        m_hover = nullptr;
        update();
    }
}

void BlockMapCanvas::mousePressEvent(QMouseEvent* event) {
    if (event->button() != Qt::LeftButton) return;
    if (const BlockMapRect* r = layout().rectAt(layoutPoint(event->position().toPoint())))
        emit blockClicked(r->segment, r->block);
}

void BlockMapCanvas::wheelEvent(QWheelEvent* event) {
    if (!(event->modifiers() & Qt::ControlModifier)) {
        event->ignore();  // plain wheel scrolls the scroll area
        return;
    }
    const double steps = event->angleDelta().y() / 120.0;
    setZoom(m_zoom * std::pow(1.25, steps));
    event->accept();
}

bool BlockMapCanvas::event(QEvent* event) {
    if (event->type() == QEvent::ToolTip) {
        auto* help = static_cast<QHelpEvent*>(event);
        const BlockMapRect* r = layout().rectAt(layoutPoint(help->pos()));
        if (r && m_state) {
            QRect area(r->rect.x() + kMargin, r->rect.y() + kMargin, r->rect.width(), r->rect.height());
            QToolTip::showText(help->globalPos(), blockTooltip(m_snapshot.get(), m_state->segments[r->segment], *r), this,
                               area);
        } else {
            QToolTip::hideText();
            event->ignore();
        }
        return true;
    }
    return QWidget::event(event);
}

} // namespace memlens::views
