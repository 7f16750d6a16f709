#pragma once
// A QApplication that does not let an exception from an event handler end the program: it is
// reported (exceptionCaught) and the event loop goes on.
#include <QApplication>

namespace memlens::gui {

class GuardedApplication : public QApplication {
    Q_OBJECT
public:
    GuardedApplication(int& argc, char** argv);
    bool notify(QObject* receiver, QEvent* event) override;

signals:
    void exceptionCaught(const QString& message);
};

} // namespace memlens::gui
