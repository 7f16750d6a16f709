#include "IterationStrip.h"

#include <QHelpEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>

#include <algorithm>

namespace memlens::gui {

IterationStrip::IterationStrip(QWidget* parent) : QWidget(parent) {
    setObjectName(QStringLiteral("iterationStrip"));
    setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Fixed);
    setMouseTracking(true);
}

void IterationStrip::setIterations(std::vector<model::SessionIteration> iterations, std::vector<int64_t> withSnapshot) {
    m_iterations = std::move(iterations);
    m_withSnapshot = std::move(withSnapshot);
    std::sort(m_withSnapshot.begin(), m_withSnapshot.end());
    update();
}

void IterationStrip::setCurrent(int64_t index) {
    if (m_current == index) return;
    m_current = index;
    update();
}

int IterationStrip::countOfPhase(const QString& phase) const {
    const std::string p = phase.toStdString();
    return static_cast<int>(std::count_if(m_iterations.begin(), m_iterations.end(), [&](const auto& it) { return it.phase == p; }));
}

QColor IterationStrip::phaseColor(const std::string& phase) {
    if (phase == "train") return QColor(0x4c, 0x78, 0xa8);
    if (phase == "eval") return QColor(0xf5, 0x85, 0x18);
    return QColor(0x9d, 0x9d, 0x9d);
}

QRectF IterationStrip::segmentRect(size_t i) const {
    // equal widths: an iteration is a step, whatever its duration
    const double w = double(width() - 2) / double(std::max<size_t>(1, m_iterations.size()));
    return QRectF(1 + w * double(i), 3, w, height() - 6);
}

int64_t IterationStrip::iterationAt(int x) const {
    if (m_iterations.empty()) return 0;
    const double w = double(width() - 2) / double(m_iterations.size());
    const auto i = static_cast<long long>((x - 1) / w);
    if (i < 0 || i >= static_cast<long long>(m_iterations.size())) return 0;
    return m_iterations[static_cast<size_t>(i)].index;
}

void IterationStrip::paintEvent(QPaintEvent*) {
    QPainter p(this);
    p.fillRect(rect(), palette().window());
    if (m_iterations.empty()) {
        p.setPen(palette().color(QPalette::PlaceholderText));
        p.drawText(rect(), Qt::AlignCenter, tr("no iterations recorded"));
        return;
    }
    const double w = segmentRect(0).width();
    if (w < 2) paintColumns(p);
    else paintSegments(p);
    for (size_t i = 0; i < m_iterations.size(); ++i) {
        if (m_iterations[i].index != m_current) continue;
        QRectF r = segmentRect(i).adjusted(-1, -2, 1, 2);
        if (r.width() < 5) r.adjust(-2, 0, 2, 0);
        p.setBrush(Qt::NoBrush);
        p.setPen(QPen(palette().color(QPalette::Highlight), 2));
        p.drawRect(r);
    }
}

bool IterationStrip::hasSnapshot(int64_t index) const {
    return std::binary_search(m_withSnapshot.begin(), m_withSnapshot.end(), index);
}

void IterationStrip::setHighlighted(std::vector<int64_t> indices) {
    std::sort(indices.begin(), indices.end());
    indices.erase(std::unique(indices.begin(), indices.end()), indices.end());
    if (indices == m_highlighted) return;
    m_highlighted = std::move(indices);
    update();
}

void IterationStrip::paintSegments(QPainter& p) const {
    const double w = segmentRect(0).width();
    // labels where they fit: every iteration, or every 2nd, 5th, 10th, 20th... one
    const QFontMetrics fm(font());
    const double labelWidth = fm.horizontalAdvance(QString::number(m_iterations.back().index)) + 8;
    size_t step = 1;
    for (int k = 0; w * double(step) < labelWidth; ++k) step = k % 3 == 1 ? step * 5 / 2 : step * 2;
    for (size_t i = 0; i < m_iterations.size(); ++i) {
        const auto& it = m_iterations[i];
        QRectF r = segmentRect(i);
        if (w >= 4) r.adjust(0.5, 0, -0.5, 0);
        p.fillRect(r, phaseColor(it.phase));
        if (hasSnapshot(it.index)) {
            p.setPen(Qt::NoPen);
            p.setBrush(Qt::white);
            const double d = std::min(5.0, std::max(2.0, r.width() - 2));
            p.drawEllipse(QPointF(r.center().x(), r.bottom() - d / 2 - 1), d / 2, d / 2);
        }
        if (std::binary_search(m_highlighted.begin(), m_highlighted.end(), it.index))
            p.fillRect(QRectF(r.left(), r.top(), r.width(), 3), QColor(0xc6, 0x28, 0x28));
        if (it.index % static_cast<int64_t>(step) == 0) {
            p.setPen(Qt::white);
            const QRectF text(r.center().x() - labelWidth / 2, r.top(), labelWidth, r.height() - 5);
            p.drawText(text, Qt::AlignHCenter | Qt::AlignVCenter, QString::number(it.index));
        }
    }
}

void IterationStrip::paintColumns(QPainter& p) const {
    // more iterations than pixels: one column per pixel, split top to bottom in the shares of the
    // phases of the iterations it covers (a short eval among many train steps still shows), with
    // a mark where any of them has a snapshot
    const double w = segmentRect(0).width();
    const int columns = width() - 2;
    const double top = 3, bottom = height() - 3;
    const std::string phases[] = {"train", "eval", "other"};
    for (int x = 0; x < columns; ++x) {
        const auto first = static_cast<size_t>(double(x) / w);
        const auto last = std::min(m_iterations.size(), static_cast<size_t>(double(x + 1) / w));
        if (first >= last) continue;
        int counts[3] = {0, 0, 0};
        bool snapshot = false;
        for (size_t i = first; i < last; ++i) {
            const std::string& ph = m_iterations[i].phase;
            ++counts[ph == "train" ? 0 : ph == "eval" ? 1 : 2];
            snapshot = snapshot || hasSnapshot(m_iterations[i].index);
        }
        const double px = 1 + x + 0.5;
        double y = top;
        for (int k = 0; k < 3; ++k) {
            if (!counts[k]) continue;
            const double h = (bottom - top) * counts[k] / double(last - first);
            p.setPen(phaseColor(phases[k]));
            p.drawLine(QPointF(px, y), QPointF(px, std::max(y, y + h - 1)));
            y += h;
        }
        if (snapshot) {
            p.setPen(Qt::white);
            p.drawLine(QPointF(px, bottom - 4), QPointF(px, bottom - 1));
        }
    }
}

void IterationStrip::mousePressEvent(QMouseEvent* event) {
    const int64_t it = iterationAt(event->position().toPoint().x());
    if (it > 0) emit iterationClicked(it);
}

bool IterationStrip::event(QEvent* e) {
    if (e->type() == QEvent::ToolTip) {
        auto* help = static_cast<QHelpEvent*>(e);
        const int64_t idx = iterationAt(help->pos().x());
        for (const auto& it : m_iterations) {
            if (it.index != idx) continue;
            const bool snap = hasSnapshot(idx);
            QToolTip::showText(help->globalPos(),
                               tr("Iteration %1 (%2), %3 ms%4")
                                   .arg(idx)
                                   .arg(QString::fromStdString(it.phase))
                                   .arg((it.endUs - it.startUs) / 1000.0, 0, 'f', 1)
                                   .arg(snap ? tr(", allocator snapshot") : QString()),
                               this);
            return true;
        }
        QToolTip::hideText();
        return true;
    }
    return QWidget::event(e);
}

} // namespace memlens::gui
