#pragma once
// What `memlens` was asked to do: files to open, and optionally a view to bring to the front and
// a screenshot to save (then exit).
#include <QString>
#include <QStringList>

class QCoreApplication;

namespace memlens::gui {

struct CommandLine {
    QStringList files;
    QString view;        // a name of viewNames(), or empty
    QString screenshot;  // PNG path, or empty
    QString error;       // a usage error, one line; empty if the arguments are fine

    static CommandLine parse(const QStringList& arguments);
};

} // namespace memlens::gui
