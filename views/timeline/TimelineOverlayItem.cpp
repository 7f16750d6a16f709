#include "timeline/TimelineOverlayItem.h"

#include <QFontMetrics>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <map>
#include <span>

namespace memlens::views {

namespace {

QColor laneColor(std::string_view name) {
    // ranges of one name share a colour; the number in "iteration 12" does not count
    std::string_view key = name;
    while (!key.empty() && (std::isdigit(static_cast<unsigned char>(key.back())) || key.back() == ' ')) key.remove_suffix(1);
    const size_t h = std::hash<std::string_view>{}(key);
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

// The pixels [from, to] of a lane already drawn, as disjoint intervals.
class PixelCover {
public:
    // The last pixel of the drawn span that holds pixel at; -inf where none does.
    double coveredTo(double at) const {
        auto it = m_spans.upper_bound(at);
        if (it == m_spans.begin()) return -std::numeric_limits<double>::infinity();
        --it;
        return it->second >= at ? it->second : -std::numeric_limits<double>::infinity();
    }
    void add(double from, double to) {
        auto it = m_spans.upper_bound(from);
        if (it != m_spans.begin() && std::prev(it)->second >= from) {
            --it;
            from = it->first;
            to = std::max(to, it->second);
        }
        while (it != m_spans.end() && it->first <= to) {
            to = std::max(to, it->second);
            it = m_spans.erase(it);
        }
        m_spans.emplace(from, to);
    }

private:
    std::map<double, double> m_spans;  // from -> to
};

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
    const std::vector<RangeMarker>& ranges = m_markers->ranges();
    const int64_t count = m_axis->count();
    // where a range ends on the axis: its last entry holds until the next one's x
    const auto endX = [&](uint32_t i) {
        const RangeMarker& r = ranges[i];
        return r.last + 1 >= count ? m_axis->endX() : m_axis->x(std::max(r.first, r.last + 1));
    };
    // The last row drawn is shared by its lane and every lane after it: what they would draw over
    // pixels already covered there adds nothing (a trace cut inside many steps leaves a range open
    // to the end in each of thousands of lanes).
    PixelCover overflow;
    // Each lane's ranges do not overlap, so their ends grow along it: the first in view is found by
    // bisection, and past a range that ends on a pixel already drawn, so is the next that ends
    // beyond it. A redraw costs the pixels drawn, not the ranges (hundreds of thousands in a long
    // trace annotated at every step).
    for (int laneIndex = 0; laneIndex < m_markers->laneCount(); ++laneIndex) {
        const int lane = std::min(laneIndex, kMaxLanes - 1);
        const bool shared = laneIndex >= kMaxLanes - 1 && m_markers->laneCount() > kMaxLanes;
        const std::span<const uint32_t> inLane = m_markers->laneRanges(laneIndex);
        auto it = std::partition_point(inLane.begin(), inLane.end(), [&](uint32_t i) { return endX(i) < lo; });
        double drawnTo = -1e9;  // last pixel drawn in this lane
        while (it != inLane.end()) {
            const uint32_t index = *it;
            const RangeMarker& r = ranges[index];
            const double xs = m_axis->x(std::clamp<int64_t>(r.first, 0, count - 1));
            if (xs > hi) break;  // and so do the rest of the lane
            double p0 = std::max<double>(x->coordToPixel(xs), area.left());
            double p1 = std::min<double>(x->coordToPixel(endX(index)), area.right());
            if (p1 - p0 < 1) p1 = p0 + 1;
            if (p1 <= drawnTo + 1 && p1 - p0 < 2) {
                // narrower than a pixel, on pixels already drawn: so are the ranges after it that
                // end before the next pixel
                const double past = x->pixelToCoord(drawnTo + 1);
                it = std::partition_point(it + 1, inLane.end(), [&](uint32_t i) { return endX(i) < past; });
                continue;
            }
            if (shared) {
                if (const double coveredTo = overflow.coveredTo(p0); coveredTo >= p1) {
                    // drawn by another lane that shares this one: so are the ranges after it in
                    // this lane that end on that span (they begin where this one ends, or later)
                    drawnTo = std::max(drawnTo, coveredTo);
                    const double past = x->pixelToCoord(coveredTo);
                    it = std::partition_point(it + 1, inLane.end(), [&](uint32_t i) { return endX(i) <= past; });
                    continue;
                }
                overflow.add(p0, p1);
            }
            ++it;
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
            int& width = m_nameWidths[index];
            const QString name = QString::fromUtf8(r.name.data(), static_cast<qsizetype>(r.name.size()));
            if (width < 0) width = fm.horizontalAdvance(name);
            const QString label = width <= room ? name : fittingLabel(name, fm, room);
            if (!label.isEmpty()) {
                painter->setPen(QColor(0x1e, 0x1e, 0x1e));
                painter->drawText(box.adjusted(3, 0, -3, 0), Qt::AlignVCenter | Qt::AlignLeft, label);
            }
        }
    }
}

void TimelineOverlayItem::drawPoints(QCPPainter* painter, const QRect& area, QCPAxis* x) {
    const double lo = x->range().lower, hi = x->range().upper;
    const QFontMetrics fm(painter->font());
    const QString labels[2] = {QStringLiteral("snapshot"), QStringLiteral("OOM")};
    const int labelWidths[2] = {fm.horizontalAdvance(labels[0]) + 8, fm.horizontalAdvance(labels[1]) + 8};
    const QColor colors[2] = {QColor(0x1f, 0x5f, 0xa8), QColor(0xd6, 0x27, 0x28)};
    // Per kind, the pixel columns [from, to] of the lines not drawn yet: lines closer than
    // kPointGap columns (a trace can hold thousands of snapshot entries) are drawn as one shaded
    // span, so a redraw draws at most a line every kPointGap columns.
    constexpr double kPointGap = 4;
    struct Run {
        double from = 0, to = -1e9;
        bool open = false;
    } runs[2];
    const auto flush = [&](int kind) {
        Run& r = runs[kind];
        if (!r.open) return;
        r.open = false;
        if (r.from == r.to) {
            painter->setPen(QPen(colors[kind], kind ? 2 : 1, kind ? Qt::SolidLine : Qt::DashLine));
            painter->drawLine(QPointF(r.from, area.top()), QPointF(r.from, area.bottom()));
            return;
        }
        QColor shade = colors[kind];
        shade.setAlpha(70);
        painter->setPen(Qt::NoPen);
        painter->setBrush(shade);
        painter->drawRect(QRectF(QPointF(r.from, area.top()), QPointF(r.to + 1, area.bottom() + 1)));
    };
    std::vector<std::pair<QRectF, int>> labelBoxes;  // drawn over the lines, once they are all drawn
    double lastLabelRight = -1e9;
    // in trace order, so their x never decreases: the first in view by bisection
    const std::vector<PointMarker>& points = m_markers->points();
    auto it = std::partition_point(points.begin(), points.end(), [&](const PointMarker& p) { return m_axis->x(p.entry) < lo; });
    for (; it != points.end(); ++it) {
        const double xv = m_axis->x(it->entry);
        if (xv > hi) break;
        const int kind = it->action == model::Action::Oom ? 1 : 0;
        const double px = std::round(x->coordToPixel(xv));
        Run& r = runs[kind];
        if (r.open && px <= r.to + kPointGap) {
            r.to = std::max(r.to, px);
            continue;
        }
        flush(kind);
        r = {px, px, true};
        const int tw = labelWidths[kind];
        double left = px + 3;
        if (left + tw > area.right()) left = px - 3 - tw;
        if (left < lastLabelRight + 2) continue;  // no overlapping labels
        labelBoxes.emplace_back(QRectF(left, area.top() + 3, tw, fm.height() + 2), kind);
        lastLabelRight = left + tw;
    }
    flush(0);
    flush(1);
    for (const auto& [box, kind] : labelBoxes) {
        painter->setPen(Qt::NoPen);
        painter->setBrush(colors[kind]);
        painter->drawRect(box);
        painter->setPen(Qt::white);
        painter->drawText(box, Qt::AlignCenter, labels[kind]);
    }
}

} // namespace memlens::views
