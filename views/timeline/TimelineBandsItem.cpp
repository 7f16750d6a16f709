#include "timeline/TimelineBandsItem.h"

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
    if (lifetimes != m_lifetimes || !lifetimes || lifetimes->size() != m_lifetimeCount) m_colors.clear();
    m_lifetimes = lifetimes;
    m_lifetimeCount = lifetimes ? lifetimes->size() : 0;
}

void TimelineBandsItem::setCategoryRoles(const std::vector<model::StackRole>* roles) {
    if (roles == m_roles) return;
    m_roles = roles;
    m_colors.clear();
}

QColor TimelineBandsItem::categoryColor(model::MemoryCategory c) {
    switch (c) {
    case model::MemoryCategory::Parameter: return QColor(0x4e, 0x79, 0xa7);
    case model::MemoryCategory::Gradient: return QColor(0xe1, 0x57, 0x59);
    case model::MemoryCategory::OptimizerState: return QColor(0xb0, 0x7a, 0xa1);
    case model::MemoryCategory::SavedForBackward: return QColor(0x59, 0xa1, 0x4f);
    case model::MemoryCategory::Input: return QColor(0xed, 0xc9, 0x48);
    case model::MemoryCategory::Other: return QColor(0x80, 0x80, 0x80);  // grey: no palette colour
    }
    return QColor(0x80, 0x80, 0x80);
}

void TimelineBandsItem::setHighlightedStack(model::StackId stack) {
    if (stack == m_highlightStack) return;
    m_highlightStack = stack;
    m_colors.clear();
}

QRgb TimelineBandsItem::colorOf(uint32_t lifetime) {
    if (m_colors.size() > 65536) m_colors.clear();  // many ranges viewed one after the other: start afresh
    auto [it, added] = m_colors.try_emplace(lifetime, 0);
    QRgb& c = it->second;
    if (added) {
        const model::StackId stack = m_lifetimes->stack(lifetime);
        if (m_roles) {
            const model::StackRole role = stack < m_roles->size() ? (*m_roles)[stack] : model::StackRole::Unknown;
            const double shade = (hash32(lifetime ^ 0x9e3779b9U) % 5) * 0.06;
            c = blend(categoryColor(model::categoryOfRole(role)).rgba(), 0xffffffff, shade);
        } else {
            c = colorFor(stack, lifetime).rgba();
        }
        if (m_highlightStack != 0 && stack != m_highlightStack) c = blend(c, 0xffffffff, 0.6);
    }
    return c;
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

    if (m_image.size() != area.size()) m_image = QImage(area.size(), QImage::Format_ARGB32_Premultiplied);
    QImage& image = m_image;  // kept from frame to frame: no new pages to fault in for every redraw
    image.fill(Qt::transparent);
    const int h = area.height();
    const int w = area.width();
    auto* bits = reinterpret_cast<QRgb*>(image.bits());
    const qsizetype stride = image.bytesPerLine() / 4;
    // the y axis is linear: row = y0 + bytes * scale, clamped to the image
    const double y0 = yAxis->coordToPixel(0.0) - area.top();
    const double scale = yAxis->coordToPixel(1e9) - area.top() - y0;
    auto row = [&](int64_t bytes) {
        const double y = y0 + static_cast<double>(bytes) * (scale / 1e9) + 0.5;
        return y <= 0 ? 0 : y >= h ? h : static_cast<int>(y);
    };
    auto fill = [&](int x, int yBottom, int yTop, QRgb c) {  // rows [yTop, yBottom): y grows downwards
        QRgb* p = bits + static_cast<qsizetype>(yTop) * stride + x;
        for (int y = yTop; y < yBottom; ++y, p += stride) *p = c;
    };
    // allocations from before the trace (the ring buffer dropped their alloc, or recording started
    // late): hatched, so that they read as memory the trace never saw allocated
    auto fillHatched = [&](int x, int yBottom, int yTop, QRgb c) {
        const QRgb light = blend(c, 0xffffffff, 0.55);
        QRgb* p = bits + static_cast<qsizetype>(yTop) * stride + x;
        for (int y = yTop; y < yBottom; ++y, p += stride) *p = ((x + y) & 3) == 0 ? c : light;
    };
    const QRgb other = m_highlightStack != 0 ? blend(otherColor().rgba(), 0xffffffff, 0.5) : otherColor().rgba();
    // a group of many allocations from one call site: its stack's colour, lighter, striped
    // across so that it does not read as one allocation
    std::vector<std::pair<QRgb, QRgb>> groupColors;
    for (size_t g = 0; g < bands.groupCount(); ++g) {
        const model::StackId stack = bands.groupStack(g);
        QRgb base;
        if (m_roles) {
            const model::StackRole role = stack < m_roles->size() ? (*m_roles)[stack] : model::StackRole::Unknown;
            base = categoryColor(model::categoryOfRole(role)).rgba();
        } else {
            base = kPalette[hash32(stack) % kPalette.size()];
        }
        if (m_highlightStack != 0 && stack != m_highlightStack) base = blend(base, 0xffffffff, 0.6);
        groupColors.push_back({blend(base, 0xffffffff, 0.3), blend(base, 0xffffffff, 0.55)});
    }
    auto fillStriped = [&](int x, int yBottom, int yTop, std::pair<QRgb, QRgb> c) {
        QRgb* p = bits + static_cast<qsizetype>(yTop) * stride + x;
        for (int y = yTop; y < yBottom; ++y, p += stride) *p = (y & 3) == 0 ? c.second : c.first;
    };
    const int columns = bands.width();
    for (int x = 0; x < w; ++x) {
        const int c = columns == w ? x : std::min(columns - 1, static_cast<int>(int64_t(x) * columns / w));
        if (bands.entry(c) == TimelineBands::kNoEntry) continue;
        int yPrev = row(0);
        int64_t groups = 0;
        for (size_t g = 0; g < bands.groupCount(); ++g) {
            groups += bands.groupBytes(c, g);
            const int yg = row(groups);
            if (yg != yPrev) fillStriped(x, yPrev, yg, groupColors[g]);
            yPrev = yg;
        }
        int64_t bytes = bands.other(c);
        int y = row(bytes);
        fill(x, yPrev, y, other);
        yPrev = y;
        for (uint32_t id : bands.lifetimes(c)) {
            bytes += static_cast<int64_t>(m_lifetimes->bytes(id));
            y = row(bytes);
            if (y == yPrev) continue;
            QRgb col = colorOf(id);
            if (static_cast<int64_t>(id) == m_hovered) col = blend(col, 0xff000000, 0.25);
            if (all[id].allocatedBeforeRecording()) fillHatched(x, yPrev, y, col);
            else fill(x, yPrev, y, col);
            if (yPrev - y >= 4) bits[y * stride + x] = blend(col, 0xff000000, 0.18);  // top edge
            yPrev = y;
        }
    }
    painter->drawImage(area.topLeft(), image);
}

} // namespace memlens::views
