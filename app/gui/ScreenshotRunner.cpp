#include "ScreenshotRunner.h"

#include "MainWindow.h"

#include "document/JobTracker.h"
#include "document/SnapshotDocument.h"

#include <QCoreApplication>
#include <QPixmap>
#include <QTimer>

#include <cstdio>

namespace memlens::gui {

ScreenshotRunner::ScreenshotRunner(MainWindow* window, QString view, QString output, QObject* parent)
    : QObject(parent), m_window(window), m_view(std::move(view)), m_output(std::move(output)) {
    connect(m_window, &MainWindow::documentOpened, this, [this] {
        // let the views lay out and replot before the picture is taken
        QTimer::singleShot(50, this, &ScreenshotRunner::capture);
    });
    connect(m_window, &MainWindow::openFailed, this, [this](const QString&, const QString& message) { fail(message); });
}

void ScreenshotRunner::start(const QString& file) {
    m_window->resize(kWidth, kHeight);
    m_window->show();
    m_window->raiseView(m_view.isEmpty() ? QStringLiteral("timeline") : m_view);
    if (file.isEmpty()) QTimer::singleShot(50, this, &ScreenshotRunner::capture);  // the start page
    else m_window->openFiles({file});
    QTimer::singleShot(300000, this, [this] { fail(QStringLiteral("memlens: timed out waiting for the file to load")); });
}

void ScreenshotRunner::capture() {
    m_window->resize(kWidth, kHeight);  // in case anything asked the window to grow
    m_window->raiseView(m_view.isEmpty() ? QStringLiteral("timeline") : m_view);
    // the views' background work (the doctor, a what-if) ends before the picture is taken
    views::JobTracker::waitForAllIdle(120000);
    if (m_view == QLatin1String("findings")) m_window->selectFinding(0);  // its evidence shown everywhere
    for (int i = 0; i < 5; ++i) QCoreApplication::processEvents();
    const QPixmap picture = m_window->grab();
    if (!picture.save(m_output, "PNG")) {
        fail(QStringLiteral("%1: cannot write the screenshot").arg(m_output));
        return;
    }
    QCoreApplication::exit(0);
}

void ScreenshotRunner::fail(const QString& message) {
    std::fprintf(stderr, "%s\n", qPrintable(QString(message).replace(QLatin1Char('\n'), QLatin1Char(' '))));
    std::fflush(stderr);
    QCoreApplication::exit(1);
}

} // namespace memlens::gui
