#include "SessionLoader.h"

#include "memlens/model/ParseError.h"
#include "memlens/model/SnapshotReader.h"
#include "document/GraphScansDocument.h"

#include <QFile>
#include <QFileInfo>

#include <chrono>

namespace memlens::gui {

bool isSessionFile(const QString& path) {
    if (path.endsWith(QStringLiteral(".memlens"), Qt::CaseInsensitive)) return true;
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) return false;
    return f.read(16) == QByteArray("SQLite format 3\0", 16);
}

SessionLoadResult loadSession(const std::string& path, int64_t snapshotId, int64_t iteration,
                              const model::LoadOptions& options, std::shared_ptr<const model::GraphScans> previousScans) {
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
    // the graph scans, here rather than on the GUI thread (only those previousScans lacks)
    out.scans = views::graphScansOf(out.file->graphScans(), {}, out.file->iterations(), previousScans, options.cancel);
    auto loaded = views::LoadedSnapshot::fromSnapshot(std::move(snapshot), path, options, views::StateHistories::Later);
    loaded->loadSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    out.loaded = std::move(loaded);
    if (iteration > 0) out.iteration = iteration;
    else if (chosen && chosen->iteration > 0) out.iteration = chosen->iteration;
    else if (!out.file->iterations().empty()) out.iteration = out.file->iterations().back().index;
    return out;
}

SessionState::SessionState(SessionLoadResult result, views::SnapshotDocument* doc)
    : views::DocumentSession(doc), m_file(std::move(result.file)), m_scans(std::move(result.scans)),
      m_snapshotId(result.snapshotId), m_iteration(result.iteration) {
    if (!m_scans) m_scans = views::graphScansOf(m_file->graphScans(), {}, m_file->iterations(), nullptr);
}

SessionState::~SessionState() = default;

SessionState* SessionState::of(const views::SnapshotDocument* doc) {
    return doc ? qobject_cast<SessionState*>(doc->session()) : nullptr;
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

namespace {

// What a poll read: the new rows, and the graph scans with the new ones parsed (null: none new).
struct PollRead {
    model::SessionFile::Rows rows;
    std::shared_ptr<const model::GraphScans> scans;
};

} // namespace

bool SessionState::poll(std::function<void(const Polled&)> done, std::function<void(const QString& message)> failed) {
    if (m_polls.isRunning()) return false;  // never two polls of one session at once
    views::JobHandlers<std::shared_ptr<PollRead>> h;
    h.done = [this, done](quint64, std::shared_ptr<PollRead> read) {
        // following the end (the last iteration selected, or none yet) is decided before the rows
        const auto& its = m_file->iterations();
        Polled p;
        p.atEnd = m_iteration == 0 || m_iteration == (its.empty() ? 0 : its.back().index);
        p.update = m_file->apply(std::move(read->rows));
        if (read->scans) m_scans = std::move(read->scans);
        if (done) done(p);
    };
    h.failed = [failed](quint64, const QString& message) {
        if (failed) failed(message);
    };
    // the file's rows change only in apply() above: the job may read them meanwhile
    m_polls.start<std::shared_ptr<PollRead>>(
        [file = m_file, scans = m_scans](const views::JobControl& job) {
            auto read = std::make_shared<PollRead>();
            read->rows = file->fetch();
            if (!read->rows.graphScans.empty()) {
                std::vector<model::SessionIteration> iterations = file->iterations();
                iterations.insert(iterations.end(), read->rows.iterations.begin(), read->rows.iterations.end());
                read->scans = views::graphScansOf(file->graphScans(), read->rows.graphScans, std::move(iterations), scans,
                                                  job.cancelFlag());
            }
            return read;
        },
        std::move(h), views::JobText{QString::fromStdString(m_file->path()), QStringLiteral("read the new rows")});
    return true;
}

SessionLoader::SessionLoader(QObject* parent) : QObject(parent) {
    qRegisterMetaType<std::shared_ptr<SessionLoadResult>>();
}

SessionLoader::~SessionLoader() = default;

void SessionLoader::cancel() { m_jobs.cancel(); }

quint64 SessionLoader::load(const QString& path, int64_t snapshotId, int64_t iteration,
                            std::shared_ptr<const model::GraphScans> previousScans) {
    using Result = std::shared_ptr<SessionLoadResult>;
    views::JobHandlers<Result> h;
    h.progress = [this](quint64 g, const QString& phase, double fraction) { emit progressChanged(g, phase, fraction); };
    h.done = [this](quint64 g, Result result) { emit loaded(g, std::move(result)); };
    h.failed = [this, path](quint64 g, const QString& message) { emit failed(g, path, message); };
    h.cancelled = [this, path](quint64 g) { emit cancelled(g, path); };
    const std::string file = QFileInfo(path).filePath().toStdString();
    return m_jobs.start<Result>(
        [file, snapshotId, iteration, previousScans](const views::JobControl& job) {
            return std::make_shared<SessionLoadResult>(loadSession(file, snapshotId, iteration, job.loadOptions(), previousScans));
        },
        std::move(h), views::JobText{path});
}

} // namespace memlens::gui
