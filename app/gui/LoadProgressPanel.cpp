#include "LoadProgressPanel.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>

#include <algorithm>
#include <cmath>

namespace memlens::gui {

LoadProgressPanel::LoadProgressPanel(QWidget* parent) : QFrame(parent) {
    setObjectName(QStringLiteral("loadProgress"));
    setStyleSheet(QStringLiteral("#loadProgress { background: #eef3fa; border-bottom: 1px solid #c9d7ea; }"));
    auto* row = new QHBoxLayout(this);
    row->setContentsMargins(10, 4, 6, 4);
    m_label = new QLabel(this);
    row->addWidget(m_label, 1);
    m_bar = new QProgressBar(this);
    m_bar->setRange(0, 1000);
    m_bar->setTextVisible(false);
    m_bar->setMaximumWidth(320);
    m_bar->setMinimumWidth(200);
    row->addWidget(m_bar);
    auto* cancel = new QPushButton(tr("Cancel"), this);
    connect(cancel, &QPushButton::clicked, this, &LoadProgressPanel::cancelRequested);
    row->addWidget(cancel);
    hide();
}

void LoadProgressPanel::start(const QString& fileName, int queued) {
    m_file = fileName;
    m_queued = queued;
    m_bar->setValue(0);
    setProgress(tr("starting"), 0);
    show();
}

void LoadProgressPanel::setProgress(const QString& phase, double fraction) {
    QString text = tr("Opening <b>%1</b> — %2 %3%").arg(m_file.toHtmlEscaped(), phase).arg(std::lround(fraction * 100));
    if (m_queued > 0) text += tr(" (%n more file(s) to open)", nullptr, m_queued);
    m_label->setText(text);
    // one bar for the whole load: the reader's phases take roughly these shares of the time
    struct Share {
        const char* phase;
        double from, to;
    };
    static constexpr Share kShares[] = {{"reading", 0.0, 0.7}, {"building", 0.7, 0.8}, {"rewinding", 0.8, 1.0}};
    double overall = fraction;
    for (const Share& s : kShares)
        if (phase == QLatin1String(s.phase)) overall = s.from + (s.to - s.from) * fraction;
    m_bar->setValue(std::max(m_bar->value(), static_cast<int>(std::lround(overall * 1000))));
}

void LoadProgressPanel::finish() { hide(); }

} // namespace memlens::gui
