#pragma once
// Loads snapshot files off the GUI thread (a JobTracker job), one at a time: a new load() cancels
// the running one. Every load gets a generation id; results of a superseded load are dropped,
// never delivered, and freed off the GUI thread. Each load ends in exactly one of loaded(),
// failed() or cancelled(); a loader destroyed while loading emits none of them.
#include "core/LoadedSnapshot.h"
#include "document/JobTracker.h"

#include <QObject>
#include <QString>

#include <memory>

namespace memlens::views {

class SnapshotLoader : public QObject {
    Q_OBJECT
public:
    explicit SnapshotLoader(QObject* parent = nullptr);
    ~SnapshotLoader() override;

    // Starts loading path and returns its generation id (never 0).
    quint64 load(const QString& path);
    // Stops the running load, if any; it then reports cancelled().
    void cancel();
    bool isLoading() const { return m_jobs.isRunning(); }
    quint64 generation() const { return m_jobs.generation(); }
    // For tests: processes events until the running load (and what it leaves to free) is done.
    bool waitForIdle(int timeoutMs = 60000) const { return m_jobs.waitForIdle(timeoutMs); }

signals:
    // phase: "reading", "rewinding"... as the reader names them; fraction in [0, 1]. Throttled.
    void progressChanged(quint64 generation, const QString& phase, double fraction);
    void loaded(quint64 generation, std::shared_ptr<const memlens::views::LoadedSnapshot> snapshot);
    // message: one line, "FILE: where: what" (ParseError::describe).
    void failed(quint64 generation, const QString& path, const QString& message);
    void cancelled(quint64 generation, const QString& path);

private:
    JobTracker m_jobs{this};
};

} // namespace memlens::views

Q_DECLARE_METATYPE(std::shared_ptr<const memlens::views::LoadedSnapshot>)
