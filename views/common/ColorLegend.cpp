#include "common/ColorLegend.h"

#include "common/ViewColors.h"

#include <QHelpEvent>
#include <QPainter>
#include <QToolTip>

namespace memlens::views {

namespace {
constexpr int kSwatch = 12;
constexpr int kSpacing = 6;   // swatch to label
constexpr int kEntryGap = 16; // between entries
}

ColorLegend::ColorLegend(QWidget* parent) : QWidget(parent) {
    QSizePolicy sp(QSizePolicy::Preferred, QSizePolicy::Preferred);
    sp.setHeightForWidth(true);
    setSizePolicy(sp);
}

void ColorLegend::setEntries(const QVector<Entry>& entries) {
    m_entries = entries;
    updateGeometry();
    update();
}

QVector<QRect> ColorLegend::place(int width) const {
    QVector<QRect> out;
    const QFontMetrics fm = fontMetrics();
    const int h = std::max(kSwatch, fm.height());
    int x = 0, y = 0;
    for (const auto& e : m_entries) {
        const int w = kSwatch + kSpacing + fm.horizontalAdvance(e.label);
        if (x > 0 && x + w > width) {
            x = 0;
            y += h + 4;
        }
        out.push_back(QRect(x, y, w, h));
        x += w + kEntryGap;
    }
    return out;
}

int ColorLegend::heightForWidth(int width) const {
    const auto rects = place(width);
    return rects.isEmpty() ? 0 : rects.back().bottom() + 1;
}

QSize ColorLegend::sizeHint() const {
    const auto rects = place(QWIDGETSIZE_MAX);
    int w = 0;
    for (const auto& r : rects) w = std::max(w, r.right() + 1);
    return QSize(w, rects.isEmpty() ? 0 : rects.back().bottom() + 1);
}

QSize ColorLegend::minimumSizeHint() const { return QSize(100, heightForWidth(100)); }

void ColorLegend::paintEvent(QPaintEvent*) {
    QPainter p(this);
    const auto rects = place(width());
    for (int i = 0; i < m_entries.size(); ++i) {
        const auto& e = m_entries[i];
        const QRect r = rects[i];
        const QRect sw(r.x(), r.y() + (r.height() - kSwatch) / 2, kSwatch, kSwatch);
        switch (e.swatch) {
        case Swatch::Fill: p.fillRect(sw, e.color); break;
        case Swatch::Hatched:
            p.fillRect(sw, e.color);
            p.fillRect(sw, QBrush(colors::estimatedHatch(), Qt::BDiagPattern));
            break;
        case Swatch::Outline:
            p.setPen(QPen(e.color, 2));
            p.setBrush(Qt::NoBrush);
            p.drawRect(QRectF(sw).adjusted(1, 1, -1, -1));
            break;
        case Swatch::Stripe: p.fillRect(QRect(sw.x(), sw.y() + 1, sw.width(), 4), e.color); break;
        }
        p.setPen(palette().color(QPalette::WindowText));
        p.drawText(QRect(sw.right() + 1 + kSpacing, r.y(), r.width() - kSwatch - kSpacing, r.height()),
                   Qt::AlignVCenter | Qt::AlignLeft, e.label);
    }
}

bool ColorLegend::event(QEvent* event) {
    if (event->type() == QEvent::ToolTip) {
        auto* help = static_cast<QHelpEvent*>(event);
        const auto rects = place(width());
        for (int i = 0; i < rects.size(); ++i)
            if (rects[i].contains(help->pos()) && !m_entries[i].toolTip.isEmpty()) {
                QToolTip::showText(help->globalPos(), m_entries[i].toolTip, this, rects[i]);
                return true;
            }
        QToolTip::hideText();
        event->ignore();
        return true;
    }
    return QWidget::event(event);
}

} // namespace memlens::views
