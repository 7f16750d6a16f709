#pragma once
// Opening a .memlens session (memlens-cli record) in the window: the file is read off the GUI
// thread, one of its allocator snapshots (the latest, or the one of a chosen iteration) is parsed
// and rewound like a snapshot file, its graph scans are parsed, and the session itself stays with
// the document (SessionState, the document's session()) for the iteration strip and live
// following.
#include "memlens/model/GraphScans.h"
#include "memlens/model/SessionFile.h"
#include "core/LoadedSnapshot.h"
#include "document/GraphScansDocument.h"
#include "document/JobTracker.h"
#include "document/SnapshotDocument.h"

#include <QObject>
#include <QPointer>
#include <QString>

#include <functional>
#include <memory>

namespace memlens::gui {

// A session: the extension .memlens, or an SQLite header (a session under another name).
bool isSessionFile(const QString& path);

struct SessionLoadResult {
    std::shared_ptr<const views::LoadedSnapshot> loaded;  // empty snapshot when there is none
    std::shared_ptr<model::SessionFile> file;
    std::shared_ptr<const model::GraphScans> scans;  // the file's graph scans, parsed
    int64_t snapshotId = 0;  // 0: none shown
    int64_t iteration = 0;   // the iteration selected (0: none)
};

// Reads PATH and the snapshot to show: snapshotId > 0 that one, else the latest. iteration: the
// iteration to select (0: the shown snapshot's, or the last one). previousScans: the graph scans
// an earlier read of the same session parsed (only newer rows are parsed then). Throws
// model::SessionError, model::ParseError, model::Cancelled.
SessionLoadResult loadSession(const std::string& path, int64_t snapshotId, int64_t iteration,
                              const model::LoadOptions& options,
                              std::shared_ptr<const model::GraphScans> previousScans = nullptr);

// The session behind a document (its session()), or nullptr for a plain snapshot.
//
// Live following: poll() reads what the writer added off the GUI thread (the SQLite reads, and
// parsing new graph scans) and takes it in on the GUI thread; one poll at a time. While a poll
// runs, the file is only read (its rows change in apply(), on the GUI thread, after the poll).
class SessionState : public views::DocumentSession {
    Q_OBJECT
public:
    SessionState(SessionLoadResult result, views::SnapshotDocument* doc);
    ~SessionState() override;
    static SessionState* of(const views::SnapshotDocument* doc);

    model::SessionFile& file() { return *m_file; }
    const model::SessionFile& file() const { return *m_file; }
    std::shared_ptr<model::SessionFile> sharedFile() const { return m_file; }
    int64_t snapshotId() const { return m_snapshotId; }
    const model::SessionSnapshot* shownSnapshot() const;
    int64_t iteration() const { return m_iteration; }
    void setIteration(int64_t it) { m_iteration = it; }
    // The snapshot taken in or at the end of iteration IT (the last one), or nullptr.
    const model::SessionSnapshot* snapshotOfIteration(int64_t it) const;

    // The file's graph scans as parsed so far (the loader's, then each poll's).
    std::shared_ptr<const model::GraphScans> graphScans() const { return m_scans; }
    // The graph views' document of these scans (made on first use by graphScansFor()).
    views::GraphScansDocument* graphScansDocument() const { return m_graphScansDocument; }
    void setGraphScansDocument(views::GraphScansDocument* g) { m_graphScansDocument = g; }
    // Whether the retained-graph docks were raised once for this session.
    bool graphDocksRaised() const { return m_graphDocksRaised; }
    void setGraphDocksRaised() { m_graphDocksRaised = true; }

    // What a poll brought. atEnd: the last iteration (or none) was selected before it.
    struct Polled {
        model::SessionFile::Update update;
        bool atEnd = false;
    };
    // Starts a poll unless one runs (then returns false). DONE runs on the GUI thread after the
    // rows were taken in; FAILED with the one-line error ("PATH: what").
    bool poll(std::function<void(const Polled&)> done, std::function<void(const QString& message)> failed);
    bool isPolling() const { return m_polls.isRunning(); }
    // For tests: processes events until the running poll is done.
    bool waitForPoll(int timeoutMs = 60000) const { return m_polls.waitForIdle(timeoutMs); }

private:
    std::shared_ptr<model::SessionFile> m_file;
    std::shared_ptr<const model::GraphScans> m_scans;
    int64_t m_snapshotId = 0;
    int64_t m_iteration = 0;
    QPointer<views::GraphScansDocument> m_graphScansDocument;
    bool m_graphDocksRaised = false;
    views::JobTracker m_polls{this};
};

// Loads sessions off the GUI thread (a JobTracker job), one at a time, like
// views::SnapshotLoader: each load ends in exactly one of loaded(), failed() or cancelled(); a
// loader destroyed while loading emits none of them.
class SessionLoader : public QObject {
    Q_OBJECT
public:
    explicit SessionLoader(QObject* parent = nullptr);
    ~SessionLoader() override;
    // previousScans: the graph scans of an open document of the same session, if any.
    quint64 load(const QString& path, int64_t snapshotId = 0, int64_t iteration = 0,
                 std::shared_ptr<const model::GraphScans> previousScans = nullptr);
    // Stops the running load, if any; it then reports cancelled().
    void cancel();
    bool isLoading() const { return m_jobs.isRunning(); }
    bool waitForIdle(int timeoutMs = 60000) const { return m_jobs.waitForIdle(timeoutMs); }

signals:
    void progressChanged(quint64 generation, const QString& phase, double fraction);
    void loaded(quint64 generation, std::shared_ptr<memlens::gui::SessionLoadResult> result);
    void failed(quint64 generation, const QString& path, const QString& message);
    void cancelled(quint64 generation, const QString& path);

private:
    views::JobTracker m_jobs{this};
};

} // namespace memlens::gui

Q_DECLARE_METATYPE(std::shared_ptr<memlens::gui::SessionLoadResult>)
