#include "memlens/views/TimelineBandsItem.h"

#include <QImage>

#include <array>
#include <cmath>

namespace memlens::views {

namespace {

constexpr std::array<QRgb, 10> kPalette = {
    0xff4e79a7, 0xfff28e2b, 0xff59a14f, 0xff76b7b2, 0xffedc948,
    0xffb07aa1, 0xffff9da7, 0xff9c755f, 0xff86bcb6, 0xffd4a6c8,
};

QRgb blend(QRgb c, QRgb towards, double t) {
    auto mix = [t](int a, int b) { return static_cast<int>(std::lround(a + (b - a) * t)); };
    return qRgba(mix(qRed(c), qRed(towards)), mix(qGreen(c), qGreen(towards)), mix(qBlue(c), qBlue(towards)), 255);
}

uint32_t hash32(uint32_t x) {
    x ^= x >> 16;
    x *= 0x7feb352dU;
    x ^= x >> 15;
    x *= 0x846ca68bU;
    x ^= x >> 16;
    return x;
}

} // namespace

TimelineBandsItem::TimelineBandsItem(QCustomPlot* plot) : QCPAbstractItem(plot) {
    setSelectable(false);
}

void TimelineBandsItem::setLayout(const TimelineLayout* layout, const AllocationLifetimes* lifetimes) {
    m_layout = layout;
    m_lifetimes = lifetimes;
}

QColor TimelineBandsItem::colorFor(model::StackId stack, uint32_t lifetime) {
    const QRgb base = kPalette[hash32(stack) % kPalette.size()];
    // neighbours from one call site differ slightly, so that their edges show
    const double shade = (hash32(lifetime ^ 0x9e3779b9U) % 5) * 0.06;
    return QColor(blend(base, 0xffffffff, shade));
}

QColor TimelineBandsItem::otherColor() { return QColor(0xc9, 0xcc, 0xd1); }

double TimelineBandsItem::selectTest(const QPointF&, bool, QVariant*) const { return -1; }

void TimelineBandsItem::draw(QCPPainter* painter) {
    if (!m_layout || !m_lifetimes || m_layout->width() == 0) return;
    QCPAxisRect* rect = clipAxisRect();
    if (!rect) return;
    const QRect area = rect->rect();
    if (area.width() <= 0 || area.height() <= 0) return;
    QCPAxis* yAxis = rect->axis(QCPAxis::atLeft);
    const TimelineBands& bands = m_layout->bands();
    const auto& all = m_lifetimes->all();

    QImage image(area.size(), QImage::Format_ARGB32_Premultiplied);
    image.fill(Qt::transparent);
    const int h = area.height();
    const int w = area.width();
    auto* bits = reinterpret_cast<QRgb*>(image.bits());
    const qsizetype stride = image.bytesPerLine() / 4;
    const double top = area.top();
    auto row = [&](int64_t bytes) {  // image row of a byte height, clamped to the image
        const double y = yAxis->coordToPixel(static_cast<double>(bytes)) - top;
        return std::clamp(static_cast<int>(std::lround(y)), 0, h);
    };
    auto fill = [&](int x, int y0, int y1, QRgb c) {  // rows [y1, y0): y grows downwards
        for (int y = y1; y < y0; ++y) bits[y * stride + x] = c;
    };
    const QRgb other = otherColor().rgba();
    const bool fade = m_highlightStack != 0;
    const int columns = bands.width();
    for (int x = 0; x < w; ++x) {
        const int c = columns == w ? x : std::min(columns - 1, static_cast<int>(int64_t(x) * columns / w));
        if (bands.entry(c) == TimelineBands::kNoEntry) continue;
        int64_t bytes = bands.other(c);
        int yPrev = row(0);
        int y = row(bytes);
        fill(x, yPrev, y, fade ? blend(other, 0xffffffff, 0.5) : other);
        yPrev = y;
        for (uint32_t id : bands.lifetimes(c)) {
            const AllocationLifetime& l = all[id];
            bytes += static_cast<int64_t>(l.size);
            y = row(bytes);
            if (y == yPrev) continue;
            QRgb col = colorFor(l.stack, id).rgba();
            if (fade && l.stack != m_highlightStack) col = blend(col, 0xffffffff, 0.6);
            if (static_cast<int64_t>(id) == m_hovered) col = blend(col, 0xff000000, 0.25);
            fill(x, yPrev, y, col);
            if (yPrev - y >= 4) bits[y * stride + x] = blend(col, 0xff000000, 0.18);  // top edge
            yPrev = y;
        }
    }
    painter->drawImage(area.topLeft(), image);
}

} // namespace memlens::views
