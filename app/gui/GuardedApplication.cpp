#include "GuardedApplication.h"

#include <exception>
#include <new>

namespace memlens::gui {

GuardedApplication::GuardedApplication(int& argc, char** argv) : QApplication(argc, argv) {}

bool GuardedApplication::notify(QObject* receiver, QEvent* event) {
    try {
        return QApplication::notify(receiver, event);
    } catch (const std::bad_alloc&) {
        emit exceptionCaught(tr("Out of memory: the last action could not complete."));
    } catch (const std::exception& e) {
        emit exceptionCaught(tr("Internal error: %1").arg(QString::fromUtf8(e.what())));
    } catch (...) {
        emit exceptionCaught(tr("Internal error."));
    }
    return false;
}

} // namespace memlens::gui
