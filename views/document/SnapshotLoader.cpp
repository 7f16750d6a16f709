#include "document/SnapshotLoader.h"

#include <QFileInfo>

namespace memlens::views {

SnapshotLoader::SnapshotLoader(QObject* parent) : QObject(parent) {
    qRegisterMetaType<std::shared_ptr<const LoadedSnapshot>>();
}

SnapshotLoader::~SnapshotLoader() = default;

quint64 SnapshotLoader::load(const QString& path) {
    using Result = std::shared_ptr<const LoadedSnapshot>;
    JobHandlers<Result> h;
    h.progress = [this](quint64 g, const QString& phase, double fraction) { emit progressChanged(g, phase, fraction); };
    h.done = [this](quint64 g, Result result) { emit loaded(g, std::move(result)); };
    h.failed = [this, path](quint64 g, const QString& message) { emit failed(g, path, message); };
    h.cancelled = [this, path](quint64 g) { emit cancelled(g, path); };
    const std::string file = QFileInfo(path).filePath().toStdString();
    return m_jobs.start<Result>(
        [file](const JobControl& job) -> Result { return LoadedSnapshot::load(file, job.loadOptions(), StateHistories::Later); }, std::move(h),
        JobText{path});
}

void SnapshotLoader::cancel() { m_jobs.cancel(); }

} // namespace memlens::views
