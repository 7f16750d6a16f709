#include "SessionLoader.h"

#include "memlens/model/ParseError.h"
#include "memlens/model/SnapshotReader.h"
#include "memlens/views/SnapshotDocument.h"

#include <QCoreApplication>
#include <QFile>
#include <QFileInfo>
#include <QMetaObject>
#include <QPointer>
#include <QtConcurrent/QtConcurrentRun>

#include <chrono>

namespace memlens::gui {

bool isSessionFile(const QString& path) {
    if (path.endsWith(QStringLiteral(".memlens"), Qt::CaseInsensitive)) return true;
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) return false;
    return f.read(16) == QByteArray("SQLite format 3\0", 16);
}

SessionLoadResult loadSession(const std::string& path, int64_t snapshotId, int64_t iteration,
                              const model::LoadOptions& options) {
    const auto t0 = std::chrono::steady_clock::now();
    if (options.progress) options.progress("reading session", 0);
    SessionLoadResult out;
    out.file = std::make_shared<model::SessionFile>(path);
    const auto& snaps = out.file->snapshots();
    const model::SessionSnapshot* chosen = snapshotId > 0 ? out.file->snapshot(snapshotId) : nullptr;
    if (!chosen && !snaps.empty()) chosen = &snaps.back();
    model::Snapshot snapshot;
    if (chosen) {
        out.snapshotId = chosen->id;
        const std::string bytes = out.file->readSnapshot(chosen->id);
        if (options.cancel && options.cancel->load()) throw model::Cancelled();
        snapshot = model::readSnapshotMemory(
            std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()), options);
    }
    if (options.cancel && options.cancel->load()) throw model::Cancelled();
    auto loaded = views::LoadedSnapshot::fromSnapshot(std::move(snapshot), path, options);
    loaded->loadSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    out.loaded = std::move(loaded);
    if (iteration > 0) out.iteration = iteration;
    else if (chosen && chosen->iteration > 0) out.iteration = chosen->iteration;
    else if (!out.file->iterations().empty()) out.iteration = out.file->iterations().back().index;
    return out;
}

SessionState::SessionState(SessionLoadResult result, views::SnapshotDocument* doc)
    : QObject(doc), m_file(std::move(result.file)), m_snapshotId(result.snapshotId), m_iteration(result.iteration) {
    setObjectName(QStringLiteral("sessionState"));
}

SessionState* SessionState::of(const views::SnapshotDocument* doc) {
    return doc ? doc->findChild<SessionState*>(QStringLiteral("sessionState"), Qt::FindDirectChildrenOnly) : nullptr;
}

const model::SessionSnapshot* SessionState::shownSnapshot() const {
    return m_snapshotId > 0 ? m_file->snapshot(m_snapshotId) : nullptr;
}

const model::SessionSnapshot* SessionState::snapshotOfIteration(int64_t it) const {
    const auto& snaps = m_file->snapshots();
    for (auto i = snaps.rbegin(); i != snaps.rend(); ++i)
        if (i->iteration == it) return &*i;
    return nullptr;
}

SessionLoader::SessionLoader(QObject* parent) : QObject(parent) {
    qRegisterMetaType<std::shared_ptr<SessionLoadResult>>();
}

SessionLoader::~SessionLoader() {
    if (m_cancel) m_cancel->store(true);
}

void SessionLoader::cancel() {
    if (m_cancel) m_cancel->store(true);
    m_cancel.reset();
    m_running = 0;
}

quint64 SessionLoader::load(const QString& path, int64_t snapshotId, int64_t iteration) {
    cancel();
    const quint64 generation = ++m_generation;
    m_running = generation;
    auto flag = std::make_shared<std::atomic<bool>>(false);
    m_cancel = flag;
    QPointer<SessionLoader> self(this);
    const std::string file = QFileInfo(path).filePath().toStdString();
    auto post = [self](auto fn) {
        QMetaObject::invokeMethod(
            qApp, [self, fn]() { if (self) fn(self.data()); }, Qt::QueuedConnection);
    };
    auto fail = [=](const QString& msg) {
        post([=](SessionLoader* l) {
            if (l->m_running != generation) return;
            l->m_running = 0;
            emit l->failed(generation, path, msg);
        });
    };
    (void)QtConcurrent::run([=]() {
        model::LoadOptions options;
        options.cancel = flag.get();
        double last = -1;
        options.progress = [&](const char* phase, double fraction) {
            if (fraction - last < 0.01 && fraction < 1) return;
            last = fraction;
            const QString p = QString::fromUtf8(phase);
            post([=](SessionLoader* l) {
                if (l->m_running == generation) emit l->progressChanged(generation, p, fraction);
            });
        };
        try {
            auto result = std::make_shared<SessionLoadResult>(loadSession(file, snapshotId, iteration, options));
            post([=](SessionLoader* l) {
                if (l->m_running != generation) return;
                l->m_running = 0;
                emit l->loaded(generation, result);
            });
        } catch (const model::Cancelled&) {
        } catch (const model::ParseError& e) {
            fail(QString::fromStdString(e.describe(file)));
        } catch (const std::bad_alloc&) {
            fail(path + QStringLiteral(": not enough memory to load this file"));
        } catch (const std::exception& e) {
            fail(path + QStringLiteral(": ") + QString::fromUtf8(e.what()));
        }
    });
    return generation;
}

} // namespace memlens::gui
