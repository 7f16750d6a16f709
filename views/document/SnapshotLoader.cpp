#include "document/SnapshotLoader.h"

#include "document/BackgroundLoad.h"

namespace memlens::views {

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
    m_cancel = std::make_shared<std::atomic<bool>>(false);
    using Result = std::shared_ptr<const LoadedSnapshot>;
    BackgroundLoadHandlers<Result> handlers;
    handlers.progress = [this, generation](const QString& phase, double fraction) {
        if (m_running == generation) emit progressChanged(generation, phase, fraction);
    };
    handlers.done = [this, generation](Result result) {
        if (m_running != generation) return;
        finish(generation);
        emit loaded(generation, result);
    };
    handlers.failed = [this, generation, path](const QString& message) {
        if (m_running != generation) return;
        finish(generation);
        emit failed(generation, path, message);
    };
    runBackgroundLoad<Result>(
        this, path, m_cancel,
        [](const std::string& file, const model::LoadOptions& options) -> Result { return LoadedSnapshot::load(file, options); },
        std::move(handlers));
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
