// memlens: the window. `memlens [FILE...] [--view NAME] [--screenshot OUT.png]`
#include "CommandLine.h"
#include "GuardedApplication.h"
#include "MainWindow.h"
#include "ProcessMemory.h"
#include "ScreenshotRunner.h"

#include <QIcon>
#include <QStatusBar>

#include <cstdio>

namespace {

// In automation runs, stderr carries only our one-line error: Qt's own chatter is dropped unless
// MEMLENS_DEBUG is set.
void quietHandler(QtMsgType type, const QMessageLogContext&, const QString& message) {
    if (type == QtFatalMsg) std::fprintf(stderr, "%s\n", qPrintable(message));
}

bool wantsScreenshot(int argc, char** argv) {
    for (int i = 1; i < argc; ++i)
        if (QByteArray(argv[i]).startsWith("--screenshot")) return true;
    return false;
}

} // namespace

int main(int argc, char** argv) {
    memlens::gui::giveLargeBlocksBack();
    const bool automation = wantsScreenshot(argc, argv);
    if (automation && qEnvironmentVariableIsEmpty("MEMLENS_DEBUG")) qInstallMessageHandler(quietHandler);
    memlens::gui::GuardedApplication app(argc, argv);
    QApplication::setApplicationName(QStringLiteral("memlens"));
    QApplication::setOrganizationName(QStringLiteral("memlens"));
    QApplication::setApplicationVersion(QStringLiteral(MEMLENS_VERSION));
    QApplication::setDesktopFileName(QStringLiteral("memlens"));
    QApplication::setWindowIcon(QIcon::fromTheme(QStringLiteral("memlens")));

    const auto cli = memlens::gui::CommandLine::parse(QApplication::arguments());
    if (!cli.error.isEmpty()) {
        std::fprintf(stderr, "%s\n", qPrintable(cli.error));
        return 2;
    }

    memlens::gui::MainWindow window(!automation);
    QObject::connect(&app, &memlens::gui::GuardedApplication::exceptionCaught, &window, [&window](const QString& m) {
        window.statusBar()->showMessage(m, 10000);
    });
    if (automation) {
        memlens::gui::ScreenshotRunner runner(&window, cli.view, cli.screenshot);
        runner.start(cli.files.value(0));
        return QApplication::exec();
    }
    window.show();
    if (!cli.view.isEmpty()) window.raiseView(cli.view);
    if (!cli.files.isEmpty()) window.openFiles(cli.files);
    return QApplication::exec();
}
