#pragma once
// Automation: open one file in a 1600x1000 window, bring a view to the front, save the window as
// a PNG and quit with 0; or print the reader's one-line error on stderr and quit with 1.
#include <QObject>
#include <QString>

namespace memlens::gui {

class MainWindow;

class ScreenshotRunner : public QObject {
    Q_OBJECT
public:
    static constexpr int kWidth = 1600;
    static constexpr int kHeight = 1000;

    ScreenshotRunner(MainWindow* window, QString view, QString output, QObject* parent = nullptr);
    // Starts loading (an empty file: pictures the start page); the application quits when done.
    void start(const QString& file);

private:
    void capture();
    void fail(const QString& message);

    MainWindow* m_window;
    QString m_view;
    QString m_output;
};

} // namespace memlens::gui
