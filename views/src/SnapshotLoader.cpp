#include "memlens/views/SnapshotLoader.h"

#include "memlens/model/ParseError.h"

#include <QCoreApplication>
#include <QFileInfo>
#include <QMetaObject>
#include <QPointer>
#include <QtConcurrent/QtConcurrentRun>

#include <cmath>
#include <exception>

namespace memlens::views {

namespace {

// Progress reports from the worker: at most one per percent, or when the phase changes.
class ProgressThrottle {
public:
    bool due(const char* phase, double fraction) {
        const int pct = static_cast<int>(std::floor(fraction * 100));
        if (phase == m_phase && pct == m_pct) return false;
        m_phase = phase;
        m_pct = pct;
        return true;
    }

private:
    const char* m_phase = nullptr;
    int m_pct = -1;
};

} // namespace

SnapshotLoader::SnapshotLoader(QObject* parent) : QObject(parent) {
    qRegisterMetaType<std::shared_ptr<const LoadedSnapshot>>();
}

SnapshotLoader::~SnapshotLoader() {
    if (m_cancel) m_cancel->store(true);
}

quint64 SnapshotLoader::load(const QString& path) {
    cancel();
    const quint64 generation = ++m_generation;
    m_running = generation;
    m_runningPath = path;
    auto flag = std::make_shared<std::atomic<bool>>(false);
    m_cancel = flag;
    QPointer<SnapshotLoader> self(this);
    const std::string file = QFileInfo(path).filePath().toStdString();

    // The worker touches no QObject: it posts its results to this object's thread, where stale
    // generations are dropped.
    auto post = [self](auto fn) {
        QMetaObject::invokeMethod(
            qApp, [self, fn]() { if (self) fn(self.data()); }, Qt::QueuedConnection);
    };
    (void)QtConcurrent::run([=]() {
        ProgressThrottle throttle;
        model::LoadOptions options;
        options.cancel = flag.get();
        options.progress = [&](const char* phase, double fraction) {
            if (!throttle.due(phase, fraction)) return;
            const QString p = QString::fromUtf8(phase);
            post([=](SnapshotLoader* l) {
                if (l->m_running == generation) emit l->progressChanged(generation, p, fraction);
            });
        };
        try {
            std::shared_ptr<const LoadedSnapshot> result = LoadedSnapshot::load(file, options);
            post([=](SnapshotLoader* l) {
                if (l->m_running != generation) return;
                l->finish(generation);
                emit l->loaded(generation, result);
            });
        } catch (const model::Cancelled&) {
            // cancel() has already reported it
        } catch (const model::ParseError& e) {
            const QString msg = QString::fromStdString(e.describe(file));
            post([=](SnapshotLoader* l) {
                if (l->m_running != generation) return;
                l->finish(generation);
                emit l->failed(generation, path, msg);
            });
        } catch (const std::bad_alloc&) {
            post([=](SnapshotLoader* l) {
                if (l->m_running != generation) return;
                l->finish(generation);
                emit l->failed(generation, path, path + QStringLiteral(": not enough memory to load this file"));
            });
        } catch (const std::exception& e) {
            const QString msg = path + QStringLiteral(": ") + QString::fromUtf8(e.what());
            post([=](SnapshotLoader* l) {
                if (l->m_running != generation) return;
                l->finish(generation);
                emit l->failed(generation, path, msg);
            });
        }
    });
    return generation;
}

void SnapshotLoader::cancel() {
    if (m_cancel) m_cancel->store(true);
    m_cancel.reset();
    if (m_running != 0) {
        const quint64 g = m_running;
        const QString path = m_runningPath;
        m_running = 0;
        emit cancelled(g, path);
    }
}

void SnapshotLoader::finish(quint64 generation) {
    if (m_running == generation) {
        m_running = 0;
        m_cancel.reset();
    }
}

} // namespace memlens::views
