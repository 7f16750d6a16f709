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
    const bool thin = segmentRect(0).width() < 4;
    for (size_t i = 0; i < m_iterations.size(); ++i) {
        const auto& it = m_iterations[i];
        QRectF r = segmentRect(i);
        QColor c = phaseColor(it.phase);
        if (!thin) r.adjust(0.5, 0, -0.5, 0);
        p.fillRect(r, c);
        if (std::binary_search(m_withSnapshot.begin(), m_withSnapshot.end(), it.index)) {
            p.setPen(Qt::NoPen);
            p.setBrush(Qt::white);
            const double d = std::min(5.0, std::max(2.0, r.width() - 2));
            p.drawEllipse(QPointF(r.center().x(), r.bottom() - d / 2 - 1), d / 2, d / 2);
        }
    }
    for (size_t i = 0; i < m_iterations.size(); ++i) {
        if (m_iterations[i].index != m_current) continue;
        QRectF r = segmentRect(i).adjusted(-1, -2, 1, 2);
        if (r.width() < 5) r.adjust(-2, 0, 2, 0);
        p.setBrush(Qt::NoBrush);
        p.setPen(QPen(palette().color(QPalette::Highlight), 2));
        p.drawRect(r);
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
            const bool snap = std::binary_search(m_withSnapshot.begin(), m_withSnapshot.end(), idx);
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
