#pragma once
// Runs a load (reading a file into a result) on Qt's thread pool for a loader object on the GUI
// thread: the worker touches no QObject; its progress (at most one report per percent or phase),
// its result and its one-line error are posted back and delivered only while CONTEXT exists.
// The loader drops results of superseded generations in its handlers; cancelling is the
// atomic flag, which the work passes on through model::LoadOptions.
#include "memlens/model/ParseError.h"
#include "memlens/model/SnapshotReader.h"

#include <QCoreApplication>
#include <QFileInfo>
#include <QMetaObject>
#include <QPointer>
#include <QString>
#include <QtConcurrent/QtConcurrentRun>

#include <atomic>
#include <exception>
#include <functional>
#include <memory>
#include <new>
#include <string>

namespace memlens::views {

// Progress reports: at most one per percent, or when the phase changes.
class ProgressThrottle {
public:
    bool due(const char* phase, double fraction);

private:
    const char* m_phase = nullptr;
    int m_pct = -1;
};

template <typename Result>
struct BackgroundLoadHandlers {
    std::function<void(const QString& phase, double fraction)> progress;
    std::function<void(Result result)> done;
    // message: one line naming the file ("FILE: where: what").
    std::function<void(const QString& message)> failed;
};

// WORK(file, options) -> Result runs on the pool; it may throw model::ParseError (reported with
// its place), model::Cancelled (nothing reported), std::bad_alloc or another std::exception.
template <typename Result, typename Work>
void runBackgroundLoad(QObject* context, const QString& path, std::shared_ptr<std::atomic<bool>> cancel, Work work,
                       BackgroundLoadHandlers<Result> handlers) {
    QPointer<QObject> guard(context);
    auto post = [guard](auto fn) {
        QMetaObject::invokeMethod(
            qApp, [guard, fn]() { if (guard) fn(); }, Qt::QueuedConnection);
    };
    const std::string file = QFileInfo(path).filePath().toStdString();
    (void)QtConcurrent::run([=]() {
        ProgressThrottle throttle;
        model::LoadOptions options;
        options.cancel = cancel.get();
        options.progress = [&](const char* phase, double fraction) {
            if (!throttle.due(phase, fraction)) return;
            const QString p = QString::fromUtf8(phase);
            post([=]() { handlers.progress(p, fraction); });
        };
        auto fail = [&](const QString& message) { post([=]() { handlers.failed(message); }); };
        try {
            Result result = work(file, options);
            post([=]() { handlers.done(result); });
        } catch (const model::Cancelled&) {
            // the loader that cancelled has reported it
        } catch (const model::ParseError& e) {
            fail(QString::fromStdString(e.describe(file)));
        } catch (const std::bad_alloc&) {
            fail(path + QStringLiteral(": not enough memory to load this file"));
        } catch (const std::exception& e) {
            fail(path + QStringLiteral(": ") + QString::fromUtf8(e.what()));
        }
    });
}

} // namespace memlens::views
