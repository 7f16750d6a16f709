#pragma once
// Loads snapshot files off the GUI thread, one at a time: a new load() cancels the running one.
// Every load gets a generation id; results of a superseded load are dropped, never delivered.
#include "core/LoadedSnapshot.h"

#include <QObject>
#include <QString>

#include <atomic>
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
    bool isLoading() const { return m_running != 0; }
    quint64 generation() const { return m_generation; }

signals:
    // phase: "reading", "rewinding"... as the reader names them; fraction in [0, 1]. Throttled.
    void progressChanged(quint64 generation, const QString& phase, double fraction);
    void loaded(quint64 generation, std::shared_ptr<const memlens::views::LoadedSnapshot> snapshot);
    // message: one line, "FILE: where: what" (ParseError::describe).
    void failed(quint64 generation, const QString& path, const QString& message);
    void cancelled(quint64 generation, const QString& path);

private:
    void finish(quint64 generation);

    quint64 m_generation = 0;
    quint64 m_running = 0;  // generation of the running load, 0 if none
    std::shared_ptr<std::atomic<bool>> m_cancel;
    QString m_runningPath;
};

} // namespace memlens::views

Q_DECLARE_METATYPE(std::shared_ptr<const memlens::views::LoadedSnapshot>)
