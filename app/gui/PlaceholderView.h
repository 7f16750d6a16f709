#pragma once
// Stands in for a view that this build does not have yet: says what will be shown there.
#include <QLabel>

namespace memlens::views {
class SnapshotDocument;
}

namespace memlens::gui {

class PlaceholderView : public QLabel {
    Q_OBJECT
public:
    PlaceholderView(const QString& title, const QString& purpose, QWidget* parent = nullptr);
    void setDocument(views::SnapshotDocument* doc);
};

} // namespace memlens::gui
