#include "common/PlaceholderPages.h"

#include <QLabel>

namespace memlens::views {

PlaceholderPages::PlaceholderPages(QWidget* parent) : QStackedWidget(parent) {
    m_label = new QLabel(this);
    m_label->setObjectName(QStringLiteral("placeholder"));
    m_label->setAlignment(Qt::AlignCenter);
    m_label->setWordWrap(true);
    m_label->setEnabled(false);
    m_label->setMargin(12);
    addWidget(m_label);
}

void PlaceholderPages::setContent(QWidget* content) {
    Q_ASSERT(!m_content);
    m_content = content;
    addWidget(content);
}

void PlaceholderPages::showPlaceholder(const QString& text) {
    m_label->setText(text);
    setCurrentWidget(m_label);
}

void PlaceholderPages::showContent() {
    if (m_content) setCurrentWidget(m_content);
}

bool PlaceholderPages::isShowingPlaceholder() const { return currentWidget() == m_label; }

QString PlaceholderPages::placeholderText() const { return isShowingPlaceholder() ? m_label->text() : QString(); }

} // namespace memlens::views
