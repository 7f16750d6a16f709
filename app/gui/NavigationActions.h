#pragma once
// The Navigate menu: stepping the current entry by keyboard (next/previous entry, entry of the
// same allocation, marker, oom) and going back through range selections.
#include <QObject>
#include <QPointer>

class QAction;
class QMenu;
class QWidget;

namespace memlens::views {
class SnapshotDocument;
}

namespace memlens::gui {

class NavigationActions : public QObject {
    Q_OBJECT
public:
    explicit NavigationActions(QWidget* window);

    void setDocument(views::SnapshotDocument* doc);
    void fillMenu(QMenu* menu) const;

    QAction* nextEvent = nullptr;
    QAction* previousEvent = nullptr;
    QAction* nextSameAllocation = nullptr;
    QAction* previousSameAllocation = nullptr;
    QAction* nextMarker = nullptr;
    QAction* previousMarker = nullptr;
    QAction* nextOom = nullptr;
    QAction* previousOom = nullptr;
    QAction* back = nullptr;
    QAction* resetSelection = nullptr;

signals:
    // Why a step went nowhere, for the status bar.
    void message(const QString& text);

private:
    QAction* make(const QString& text, const QKeySequence& key, const QString& tip);
    void go(std::optional<int64_t> target, const QString& none);
    void updateEnabled();

    QWidget* m_window;
    QPointer<views::SnapshotDocument> m_doc;
};

} // namespace memlens::gui
