#include "ErrorBanner.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QStyle>
#include <QToolButton>

namespace memlens::gui {

ErrorBanner::ErrorBanner(QWidget* parent) : QFrame(parent) {
    setObjectName(QStringLiteral("errorBanner"));
    setStyleSheet(QStringLiteral("#errorBanner { background: #fdecea; border-bottom: 1px solid #f1b0ab; }"
                                 "#errorBanner QLabel { color: #611a15; }"));
    auto* row = new QHBoxLayout(this);
    row->setContentsMargins(10, 6, 6, 6);
    auto* icon = new QLabel(this);
    icon->setPixmap(style()->standardIcon(QStyle::SP_MessageBoxCritical).pixmap(18, 18));
    row->addWidget(icon);
    m_text = new QLabel(this);
    m_text->setWordWrap(true);
    m_text->setTextInteractionFlags(Qt::TextSelectableByMouse);
    row->addWidget(m_text, 1);
    auto* close = new QToolButton(this);
    close->setText(QStringLiteral("✕"));
    close->setAutoRaise(true);
    close->setToolTip(tr("Dismiss"));
    connect(close, &QToolButton::clicked, this, &ErrorBanner::dismiss);
    row->addWidget(close);
    hide();
}

void ErrorBanner::showError(const QString& message) {
    m_text->setText(message);
    show();
}

QString ErrorBanner::message() const { return isVisible() ? m_text->text() : QString(); }

void ErrorBanner::dismiss() {
    m_text->clear();
    hide();
}

} // namespace memlens::gui
