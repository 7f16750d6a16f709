#pragma once
// The views the window docks, by the names the command line uses (--view NAME), and how to make
// each one.
#include <QString>
#include <QStringList>
#include <QWidget>

#include <functional>

namespace memlens::views {
class SnapshotDocument;
}

namespace memlens::gui {

struct ViewInfo {
    QString name;        // "timeline", "blocks", "events", "stack", "breakdown", "sites", "graphs", "graph", "whatif"
    QString title;       // "Timeline", "Block map", ...
    QString objectName;  // of its dock, for saveState
};

struct ViewHandle {
    QWidget* widget = nullptr;
    std::function<void(views::SnapshotDocument*)> setDocument;
};

QList<ViewInfo> viewCatalog();
QStringList viewNames();
ViewHandle createView(const QString& name, QWidget* parent);

} // namespace memlens::gui
