#pragma once
// Waiting for background work to be over before asserting what it did (or did not) deliver:
// never a fixed sleep. Qt-only (no widgets).
#include <QCoreApplication>
#include <QThreadPool>

namespace memlens::test {

// Waits until Qt's global thread pool has no work (QtConcurrent::run jobs: loads, the events
// filter), then delivers on this thread what that work posted back (queued calls), repeating
// while the delivered results started more work. False if the pool is still busy after
// `timeoutMs`.
inline bool drainGlobalThreadPool(int timeoutMs = 60000) {
    QThreadPool* pool = QThreadPool::globalInstance();
    for (int round = 0; round < 20; ++round) {
        if (!pool->waitForDone(timeoutMs)) return false;
        QCoreApplication::sendPostedEvents();
        QCoreApplication::processEvents();
        if (pool->activeThreadCount() == 0) return true;
    }
    return pool->activeThreadCount() == 0;
}

} // namespace memlens::test
