#include "timeline/TimelineOverlayItem.h"

#include <QFontMetrics>

#include <algorithm>
#include <cmath>

namespace memlens::views {

namespace {

QColor laneColor(const std::string& name) {
    // ranges of one name share a colour; the number in "iteration 12" does not count
    std::string key = name;
    while (!key.empty() && (std::isdigit(static_cast<unsigned char>(key.back())) || key.back() == ' ')) key.pop_back();
    const size_t h = std::hash<std::string>{}(key);
    static const QColor kColors[] = {QColor(0x8d, 0xa9, 0xc4), QColor(0xb5, 0xc9, 0x9a), QColor(0xe0, 0xb8, 0x8a),
                                     QColor(0xc3, 0xa6, 0xc9), QColor(0x9f, 0xc5, 0xc0), QColor(0xd9, 0xa5, 0xa5)};
    return kColors[h % std::size(kColors)];
}

// The name if it fits; else the number at its end ("iteration 12" -> "12"); else the name elided;
// else nothing.
QString fittingLabel(const QString& name, const QFontMetrics& fm, int room) {
    if (fm.horizontalAdvance(name) <= room) return name;
    int digits = 0;
    while (digits < name.size() && name.at(name.size() - 1 - digits).isDigit()) ++digits;
    if (digits > 0 && fm.horizontalAdvance(name.right(digits)) <= room) {
        const QString shortName = name.left(name.size() - digits).trimmed();
        const QString elided = fm.elidedText(shortName, Qt::ElideRight, room - fm.horizontalAdvance(QLatin1Char(' ') + name.right(digits)));
        if (elided.size() >= 5) return elided + QLatin1Char(' ') + name.right(digits);  // "iter… 12"
        return name.right(digits);
    }
    if (room < fm.horizontalAdvance(QStringLiteral("Mm…"))) return {};
    return fm.elidedText(name, Qt::ElideRight, room);
}

} // namespace

TimelineOverlayItem::TimelineOverlayItem(QCustomPlot* plot) : QCPAbstractItem(plot) {
    setSelectable(false);
    setClipToAxisRect(false);
}

void TimelineOverlayItem::setMarkers(const TimelineMarkers* markers, const EntryAxis* axis) {
    m_markers = markers;
    m_axis = axis;
    m_nameWidths.assign(markers ? markers->ranges().size() : 0, -1);
}

int TimelineOverlayItem::lanesHeight() const {
    const int lanes = m_markers ? std::min(m_markers->laneCount(), kMaxLanes) : 0;
    return lanes * kLaneHeight;
}

double TimelineOverlayItem::selectTest(const QPointF&, bool, QVariant*) const { return -1; }

void TimelineOverlayItem::draw(QCPPainter* painter) {
    QCPAxisRect* rect = clipAxisRect();
    if (!rect || !m_axis) return;
    const QRect area = rect->rect();
    QCPAxis* x = rect->axis(QCPAxis::atBottom);
    auto px = [&](double v) { return x->coordToPixel(v); };
    auto entryStart = [&](int64_t i) { return px(m_axis->x(std::clamp<int64_t>(i, 0, m_axis->count() - 1))); };
    auto entryEnd = [&](int64_t i) {
        return i + 1 >= m_axis->count() ? px(m_axis->endX()) : px(m_axis->x(i + 1));
    };
    painter->setAntialiasing(false);
    if (m_axis->count() > 0) {
        if (m_selection) drawSpan(painter, area, entryStart(m_selection->first), entryEnd(m_selection->second), false);
        if (m_drag) drawSpan(painter, area, px(m_drag->first), px(m_drag->second), true);
    }
    if (m_markers && m_axis->count() > 0) {
        drawLanes(painter, area, x);
        drawPoints(painter, area, x);
    }
    if (m_current >= 0 && m_current < m_axis->count()) {
        const double cx = std::round(entryStart(m_current));
        if (cx >= area.left() && cx <= area.right()) {
            painter->setPen(QPen(QColor(0x20, 0x20, 0x20), 1));
            painter->drawLine(QPointF(cx, area.top()), QPointF(cx, area.bottom()));
            // a small handle at the bottom
            QPolygonF tri;
            tri << QPointF(cx - 5, area.bottom()) << QPointF(cx + 5, area.bottom()) << QPointF(cx, area.bottom() - 7);
            painter->setBrush(QColor(0x20, 0x20, 0x20));
            painter->drawPolygon(tri);
        }
    }
}

void TimelineOverlayItem::drawSpan(QCPPainter* painter, const QRect& area, double px0, double px1, bool dashed) {
    if (px1 < px0) std::swap(px0, px1);
    px1 = std::max(px1, px0 + 1);
    // the selection stays as it is; what lies outside it is dimmed
    painter->setPen(Qt::NoPen);
    painter->setBrush(QColor(255, 255, 255, dashed ? 110 : 150));
    const double left = std::clamp<double>(px0, area.left(), area.right() + 1);
    const double right = std::clamp<double>(px1, area.left(), area.right() + 1);
    if (left > area.left()) painter->drawRect(QRectF(QPointF(area.left(), area.top()), QPointF(left, area.bottom() + 1)));
    if (right < area.right() + 1) painter->drawRect(QRectF(QPointF(right, area.top()), QPointF(area.right() + 1, area.bottom() + 1)));
    QPen edge(QColor(0x2a, 0x62, 0xb0), 1, dashed ? Qt::DashLine : Qt::SolidLine);
    painter->setPen(edge);
    if (px0 >= area.left() && px0 <= area.right()) painter->drawLine(QPointF(px0, area.top()), QPointF(px0, area.bottom()));
    if (px1 >= area.left() && px1 <= area.right()) painter->drawLine(QPointF(px1, area.top()), QPointF(px1, area.bottom()));
    // a bar along the top marks the range itself
    if (right > left) {
        painter->setPen(Qt::NoPen);
        painter->setBrush(QColor(0x2a, 0x62, 0xb0, dashed ? 120 : 200));
        painter->drawRect(QRectF(QPointF(left, area.top()), QPointF(right, area.top() + 3)));
    }
}

void TimelineOverlayItem::drawLanes(QCPPainter* painter, const QRect& area, QCPAxis* x) {
    const int lanes = std::min(m_markers->laneCount(), kMaxLanes);
    if (lanes == 0) return;
    const double lo = x->range().lower, hi = x->range().upper;
    QFont font = painter->font();
    font.setPointSizeF(font.pointSizeF() * 0.85);
    painter->setFont(font);
    const QFontMetrics fm(font);
    const int lanesTop = area.top() - lanes * kLaneHeight;
    std::vector<double> laneEnd(static_cast<size_t>(lanes), -1e9);  // last pixel drawn in each lane
    for (const RangeMarker& r : m_markers->ranges()) {
        const double xs = m_axis->x(std::clamp<int64_t>(r.first, 0, m_axis->count() - 1));
        const double xe = r.last + 1 >= m_axis->count() ? m_axis->endX() : m_axis->x(std::max(r.first, r.last + 1));
        if (xe < lo || xs > hi) continue;
        const int lane = std::min(r.lane, kMaxLanes - 1);
        double p0 = std::max<double>(x->coordToPixel(xs), area.left());
        double p1 = std::min<double>(x->coordToPixel(xe), area.right());
        if (p1 - p0 < 1) p1 = p0 + 1;
        // ranges narrower than a pixel that fall on pixels already drawn add nothing: skip them
        double& drawnTo = laneEnd[static_cast<size_t>(lane)];
        if (p1 <= drawnTo + 1 && p1 - p0 < 2) continue;
        drawnTo = std::max(drawnTo, p1);
        const QRectF box(p0, lanesTop + lane * kLaneHeight + 1, p1 - p0, kLaneHeight - 2);
        const QColor c = laneColor(r.name);
        painter->setPen(p1 - p0 >= 4 ? QPen(c.darker(140), 1) : Qt::NoPen);
        painter->setBrush(c);
        painter->drawRect(box);
        if (lane == 0 && p1 - p0 >= 24) {  // faint boundary of the outermost ranges across the plot
            painter->setPen(QPen(QColor(0, 0, 0, 28), 1, Qt::DotLine));
            painter->drawLine(QPointF(std::round(p0), area.top()), QPointF(std::round(p0), area.bottom()));
        }
        const int room = static_cast<int>(box.width()) - 6;
        if (room < 10) continue;  // no label fits: skip the text work
        int& width = m_nameWidths[static_cast<size_t>(&r - m_markers->ranges().data())];
        const QString name = QString::fromStdString(r.name);
        if (width < 0) width = fm.horizontalAdvance(name);
        const QString label = width <= room ? name : fittingLabel(name, fm, room);
        if (!label.isEmpty()) {
            painter->setPen(QColor(0x1e, 0x1e, 0x1e));
            painter->drawText(box.adjusted(3, 0, -3, 0), Qt::AlignVCenter | Qt::AlignLeft, label);
        }
    }
}

void TimelineOverlayItem::drawPoints(QCPPainter* painter, const QRect& area, QCPAxis* x) {
    const double lo = x->range().lower, hi = x->range().upper;
    const QFontMetrics fm(painter->font());
    double lastLabelRight = -1e9;
    for (const PointMarker& p : m_markers->points()) {
        const double xv = m_axis->x(p.entry);
        if (xv < lo || xv > hi) continue;
        const bool oom = p.action == model::Action::Oom;
        const QColor c = oom ? QColor(0xd6, 0x27, 0x28) : QColor(0x1f, 0x5f, 0xa8);
        const double px = std::round(x->coordToPixel(xv));
        painter->setPen(QPen(c, oom ? 2 : 1, oom ? Qt::SolidLine : Qt::DashLine));
        painter->drawLine(QPointF(px, area.top()), QPointF(px, area.bottom()));
        const QString label = oom ? QStringLiteral("OOM") : QStringLiteral("snapshot");
        const int tw = fm.horizontalAdvance(label) + 8;
        double left = px + 3;
        if (left + tw > area.right()) left = px - 3 - tw;
        if (left < lastLabelRight + 2) continue;  // no overlapping labels
        const QRectF box(left, area.top() + 3, tw, fm.height() + 2);
        painter->setPen(Qt::NoPen);
        painter->setBrush(c);
        painter->drawRect(box);
        painter->setPen(Qt::white);
        painter->drawText(box, Qt::AlignCenter, label);
        lastLabelRight = box.right();
    }
}

} // namespace memlens::views
