#pragma once
// Opening a .memlens session (memlens-cli record) in the window: the file is read off the GUI
// thread, one of its allocator snapshots (the latest, or the one of a chosen iteration) is parsed
// and rewound like a snapshot file, and the session itself stays with the document
// (SessionState, a child of the SnapshotDocument) for the iteration strip and live following.
#include "memlens/model/SessionFile.h"
#include "core/LoadedSnapshot.h"

#include <QObject>
#include <QString>

#include <atomic>
#include <memory>

namespace memlens::views {
class SnapshotDocument;
}

namespace memlens::gui {

// A session: the extension .memlens, or an SQLite header (a session under another name).
bool isSessionFile(const QString& path);

struct SessionLoadResult {
    std::shared_ptr<const views::LoadedSnapshot> loaded;  // empty snapshot when there is none
    std::shared_ptr<model::SessionFile> file;
    int64_t snapshotId = 0;  // 0: none shown
    int64_t iteration = 0;   // the iteration selected (0: none)
};

// Reads PATH and the snapshot to show: snapshotId > 0 that one, else the latest. iteration: the
// iteration to select (0: the shown snapshot's, or the last one). Throws model::SessionError,
// model::ParseError, model::Cancelled.
SessionLoadResult loadSession(const std::string& path, int64_t snapshotId, int64_t iteration,
                              const model::LoadOptions& options);

// The session behind a document (its child object), or nullptr for a plain snapshot.
class SessionState : public QObject {
    Q_OBJECT
public:
    SessionState(SessionLoadResult result, views::SnapshotDocument* doc);
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

private:
    std::shared_ptr<model::SessionFile> m_file;
    int64_t m_snapshotId = 0;
    int64_t m_iteration = 0;
};

// Loads sessions off the GUI thread, one at a time (like views::SnapshotLoader).
class SessionLoader : public QObject {
    Q_OBJECT
public:
    explicit SessionLoader(QObject* parent = nullptr);
    ~SessionLoader() override;
    quint64 load(const QString& path, int64_t snapshotId = 0, int64_t iteration = 0);
    void cancel();
    bool isLoading() const { return m_running != 0; }

signals:
    void progressChanged(quint64 generation, const QString& phase, double fraction);
    void loaded(quint64 generation, std::shared_ptr<memlens::gui::SessionLoadResult> result);
    void failed(quint64 generation, const QString& path, const QString& message);

private:
    quint64 m_generation = 0;
    quint64 m_running = 0;
    std::shared_ptr<std::atomic<bool>> m_cancel;
};

} // namespace memlens::gui

Q_DECLARE_METATYPE(std::shared_ptr<memlens::gui::SessionLoadResult>)
