#include "SessionLoader.h"

#include "memlens/model/ParseError.h"
#include "memlens/model/SnapshotReader.h"
#include "document/BackgroundLoad.h"
#include "document/SnapshotDocument.h"

#include <QFile>

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
        try {
            snapshot = model::readSnapshotMemory(
                std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()), options);
        } catch (const model::ParseError& e) {
            // "run.memlens: snapshot 3 (oom, iteration 12), byte 1234: what"
            std::string where = "snapshot " + std::to_string(chosen->id) + " (" + chosen->trigger + ", iteration " +
                                std::to_string(chosen->iteration) + ")";
            if (!e.where().empty()) where += ", " + e.where();
            else if (e.offset() != model::ParseError::kNoOffset) where += ", byte " + std::to_string(e.offset());
            throw model::ParseError(model::ParseError::kNoOffset, where, e.what());
        }
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
    m_cancel = std::make_shared<std::atomic<bool>>(false);
    using Result = std::shared_ptr<SessionLoadResult>;
    views::BackgroundLoadHandlers<Result> handlers;
    handlers.progress = [this, generation](const QString& phase, double fraction) {
        if (m_running == generation) emit progressChanged(generation, phase, fraction);
    };
    handlers.done = [this, generation](Result result) {
        if (m_running != generation) return;
        m_running = 0;
        emit loaded(generation, result);
    };
    handlers.failed = [this, generation, path](const QString& message) {
        if (m_running != generation) return;
        m_running = 0;
        emit failed(generation, path, message);
    };
    views::runBackgroundLoad<Result>(
        this, path, m_cancel,
        [snapshotId, iteration](const std::string& file, const model::LoadOptions& options) {
            return std::make_shared<SessionLoadResult>(loadSession(file, snapshotId, iteration, options));
        },
        std::move(handlers));
    return generation;
}

} // namespace memlens::gui
