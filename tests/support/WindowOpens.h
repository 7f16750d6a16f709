#pragma once
// Waiting for the window to have opened files, for the tests of app/ (they link the window):
// never a fixed sleep.
#include "MainWindow.h"
#include "document/SnapshotDocument.h"

#include <QSignalSpy>
#include <QtTest>

namespace memlens::test {

// COUNT documentOpened signals, no load running, and the shown document's final state there (a
// large file's document arrives before it; what the views show of it comes with stateReady).
// False after timeoutMs.
inline bool waitForOpens(gui::MainWindow& w, const QSignalSpy& opened, int count, int timeoutMs) {
    return QTest::qWaitFor(
        [&] {
            return opened.count() >= count && !w.isLoading() &&
                   (!w.currentDocument() || !w.currentDocument()->isStatePending());
        },
        timeoutMs);
}

} // namespace memlens::test
