#include "breakdown/BreakdownBar.h"
#include "common/ByteText.h"

#include "common/ViewColors.h"

#include <QHelpEvent>
#include <QPainter>
#include <QPainterPath>
#include <QToolTip>

#include <algorithm>

namespace memlens::views {

namespace {
constexpr int kBarHeight = 34;
constexpr double kTailShare = 0.16;  // of the width, for what a snapshot does not see
}

BreakdownBar::BreakdownBar(QWidget* parent) : QWidget(parent) {
    setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Fixed);
    setMouseTracking(true);
}

void BreakdownBar::setBreakdown(const model::MemoryBreakdown& breakdown) {
    m_breakdown = breakdown;
    m_empty = false;
    update();
}

void BreakdownBar::clear() {
    m_breakdown = {};
    m_empty = true;
    update();
}

QSize BreakdownBar::sizeHint() const { return QSize(600, kBarHeight + 2 * fontMetrics().height() + 10); }
QSize BreakdownBar::minimumSizeHint() const { return QSize(200, sizeHint().height()); }

QRect BreakdownBar::barRect() const { return QRect(1, 1, width() - 2, kBarHeight); }

std::vector<QRect> BreakdownBar::partRects() const {
    std::vector<QRect> out;
    if (m_empty) return out;
    const QRect bar = barRect();
    const bool tail = !m_breakdown.hasProcessFigures;
    const int known = tail ? static_cast<int>(bar.width() * (1.0 - kTailShare)) : bar.width();
    const uint64_t total = std::max<uint64_t>(1, m_breakdown.totalBytes);
    // widths in proportion, at least 2 px for a part that is not empty, the rest from the largest
    std::vector<int> w;
    int used = 0;
    for (const auto& p : m_breakdown.parts) {
        int px = p.bytes == 0 ? 0 : std::max(2, static_cast<int>(static_cast<double>(p.bytes) / total * known));
        w.push_back(px);
        used += px;
    }
    if (!w.empty() && m_breakdown.totalBytes > 0) {
        auto largest = std::max_element(w.begin(), w.end());
        *largest = std::max(0, *largest + (known - used));
    }
    int x = bar.x();
    for (int px : w) {
        out.push_back(QRect(x, bar.y(), px, bar.height()));
        x += px;
    }
    if (tail) out.push_back(QRect(x, bar.y(), bar.right() + 1 - x, bar.height()));
    return out;
}

int BreakdownBar::partAt(QPoint p) const {
    const auto rects = partRects();
    for (size_t i = 0; i < rects.size() && i < m_breakdown.parts.size(); ++i)
        if (rects[i].contains(p)) return static_cast<int>(i);
    return -1;
}

void BreakdownBar::paintEvent(QPaintEvent*) {
    QPainter p(this);
    p.setRenderHint(QPainter::Antialiasing, false);
    const QRect bar = barRect();
    if (m_empty) {
        p.setPen(QPen(palette().color(QPalette::Mid), 1, Qt::DashLine));
        p.drawRect(bar.adjusted(0, 0, -1, -1));
        return;
    }
    const auto rects = partRects();
    const QFontMetrics fm = fontMetrics();
    for (size_t i = 0; i < m_breakdown.parts.size(); ++i) {
        const QRect r = rects[i];
        if (r.width() <= 0) continue;
        const QColor c = colors::breakdownPart(m_breakdown.parts[i].part);
        p.fillRect(r, c);
        // a label inside when it fits: "Live tensors 1.2 GiB", else the bytes, else nothing
        const QString full = QString::fromStdString(m_breakdown.parts[i].label) + QStringLiteral("  ") + formatBytes(m_breakdown.parts[i].bytes);
        const QString shortText = formatBytes(m_breakdown.parts[i].bytes);
        const QString text = fm.horizontalAdvance(full) + 10 <= r.width() ? full
                             : fm.horizontalAdvance(shortText) + 8 <= r.width() ? shortText
                                                                               : QString();
        if (!text.isEmpty()) {
            p.setPen(c.lightness() < 150 ? Qt::white : QColor(0x20, 0x20, 0x20));
            p.drawText(r, Qt::AlignCenter, text);
        }
        if (i > 0) p.fillRect(QRect(r.x(), r.y(), 1, r.height()), QColor(255, 255, 255, 200));
    }
    // where the allocator's part ends: reserved
    int reservedEnd = bar.x();
    for (size_t i = 0; i < m_breakdown.parts.size() && i < 5; ++i) reservedEnd = rects[i].right() + 1;
    const bool tail = !m_breakdown.hasProcessFigures;
    if (tail) {
        const QRect t = rects.back();
        p.fillRect(t, QColor(0xf2, 0xf2, 0xf2));
        p.fillRect(t, QBrush(QColor(0xb0, 0xb0, 0xb0), Qt::BDiagPattern));
        p.setPen(QPen(QColor(0x90, 0x90, 0x90), 1, Qt::DashLine));
        p.drawRect(t.adjusted(0, 0, -1, -1));
        p.setPen(QColor(0x55, 0x55, 0x55));
        const QString q = fm.horizontalAdvance(tr("not in a snapshot")) + 8 <= t.width() ? tr("not in a snapshot") : tr("?");
        p.drawText(t, Qt::AlignCenter, q);
    }
    p.setPen(palette().color(QPalette::Dark));
    p.setBrush(Qt::NoBrush);
    p.drawRect(QRect(bar.x(), bar.y(), (tail ? rects.back().x() : bar.right() + 1) - bar.x(), bar.height()).adjusted(0, 0, -1, -1));

    // ticks and their labels under the bar; a label that would overlap the one before is left out
    p.setPen(palette().color(QPalette::WindowText));
    const int y = bar.bottom() + 1;
    QRect lastLabel;
    auto tick = [&](int x, const QString& label, bool alignRight, const QColor& color) {
        const int w = fm.horizontalAdvance(label);
        int lx = alignRight ? x - w : x - w / 2;
        lx = std::clamp(lx, 0, std::max(0, width() - w - 1));
        const QRect r(lx, y + 6, w, fm.height());
        if (!lastLabel.isNull() && r.adjusted(-6, 0, 6, 0).intersects(lastLabel)) return;
        p.setPen(palette().color(QPalette::WindowText));
        p.drawLine(x, y, x, y + 5);
        p.setPen(color);
        p.drawText(QPoint(lx, y + 6 + fm.ascent()), label);
        lastLabel = r;
    };
    const QColor text = palette().color(QPalette::WindowText);
    tick(bar.x(), QStringLiteral("0"), false, text);
    tick(reservedEnd - 1, tr("reserved %1").arg(formatBytes(m_breakdown.reservedBytes)), true, text);
    if (m_breakdown.hasProcessFigures && reservedEnd < bar.right())
        tick(bar.right(), tr("process %1 (nvidia-smi)").arg(formatBytes(m_breakdown.totalBytes)), true, text);
    else if (!m_breakdown.hasProcessFigures)
        tick(bar.right(), tr("nvidia-smi: more"), true, QColor(0x70, 0x70, 0x70));
}

bool BreakdownBar::event(QEvent* event) {
    if (event->type() == QEvent::ToolTip) {
        auto* help = static_cast<QHelpEvent*>(event);
        const int i = partAt(help->pos());
        const auto rects = partRects();
        if (i >= 0) {
            const auto& part = m_breakdown.parts[static_cast<size_t>(i)];
            QToolTip::showText(help->globalPos(),
                               QStringLiteral("<b>%1</b>: %2<br>%3")
                                   .arg(QString::fromStdString(part.label).toHtmlEscaped(), formatBytes(part.bytes),
                                        QString::fromStdString(part.explanation).toHtmlEscaped()),
                               this, rects[static_cast<size_t>(i)]);
        } else if (!m_empty && !m_breakdown.hasProcessFigures && !rects.empty() && rects.back().contains(help->pos())) {
            QToolTip::showText(help->globalPos(),
                               tr("The CUDA context (typically 300\u2013600 MiB) and memory that NCCL and other "
                                  "libraries take outside PyTorch: nvidia-smi counts them, a snapshot cannot."),
                               this, rects.back());
        } else {
            QToolTip::hideText();
            event->ignore();
        }
        return true;
    }
    return QWidget::event(event);
}

} // namespace memlens::views
