#include "CommandLine.h"

#include "ViewCatalog.h"

#include <QCommandLineParser>
#include <QCoreApplication>

namespace memlens::gui {

CommandLine CommandLine::parse(const QStringList& arguments) {
    CommandLine out;
    QCommandLineParser parser;
    parser.setApplicationDescription(
        QCoreApplication::translate("main", "Shows where the GPU memory of a PyTorch job goes, from its memory snapshots."));
    parser.addHelpOption();
    parser.addVersionOption();
    parser.addPositionalArgument(QStringLiteral("FILE"), QCoreApplication::translate("main", "Snapshot pickles to open."),
                                 QStringLiteral("[FILE...]"));
    const QCommandLineOption view(QStringLiteral("view"),
                                  QCoreApplication::translate("main", "Bring this view to the front: %1.")
                                      .arg(viewNames().join(QStringLiteral(", "))),
                                  QStringLiteral("NAME"));
    const QCommandLineOption screenshot(
        QStringLiteral("screenshot"),
        QCoreApplication::translate("main", "Open FILE, save the window (1600x1000) as this PNG, and exit."),
        QStringLiteral("OUT.png"));
    parser.addOption(view);
    parser.addOption(screenshot);
    parser.process(arguments);  // --help and --version exit here
    out.files = parser.positionalArguments();
    out.view = parser.value(view);
    out.screenshot = parser.value(screenshot);
    if (!out.view.isEmpty() && !viewNames().contains(out.view))
        out.error = QStringLiteral("memlens: unknown view '%1'; the views are %2")
                        .arg(out.view, viewNames().join(QStringLiteral(", ")));
    else if (!out.screenshot.isEmpty() && out.files.size() > 1)
        out.error = QStringLiteral("memlens: --screenshot takes one FILE (none: the start page)");
    return out;
}

} // namespace memlens::gui
