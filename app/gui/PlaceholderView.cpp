#include "PlaceholderView.h"

namespace memlens::gui {

PlaceholderView::PlaceholderView(const QString& title, const QString& purpose, QWidget* parent) : QLabel(parent) {
    setAlignment(Qt::AlignCenter);
    setWordWrap(true);
    setMargin(16);
    setStyleSheet(QStringLiteral("color: #777;"));
    setText(tr("<b>%1</b><br>%2<br><i>Not available in this build yet.</i>").arg(title.toHtmlEscaped(), purpose.toHtmlEscaped()));
}

void PlaceholderView::setDocument(views::SnapshotDocument*) {}

} // namespace memlens::gui
