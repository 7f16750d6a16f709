#pragma once
// `memlens-cli attach PID -o FILE`, run in the background for File > Attach. attached() comes when
// the CLI prints its line "memlens: attached to …" on stderr (FILE is a live session then);
// finished() when it ends, with its last stderr line when it failed ("memlens-cli: process 123
// has not imported torch"). detach() asks it (SIGINT) to take its hooks out of the job and finish
// the session; the job keeps running. Deleting it while it runs detaches too.
#include <QObject>
#include <QString>
#include <QStringList>

class QProcess;

namespace memlens::gui {

class AttachProcess : public QObject {
    Q_OBJECT
public:
    // PROGRAM LEADINGARGS attach PID -o OUTPUT (tests put a stand-in in place of memlens-cli).
    AttachProcess(const QString& program, const QStringList& leadingArgs, qint64 pid, const QString& output,
                  QObject* parent = nullptr);
    ~AttachProcess() override;

    void start();
    qint64 targetPid() const { return m_pid; }
    QString output() const { return m_output; }
    qint64 processId() const;  // the CLI's own pid, 0 when it does not run
    bool isRunning() const;
    bool isAttached() const { return m_attached; }

    // SIGINT to the CLI: it detaches and exits.
    void detach();
    // detach(), then waits at most MS milliseconds for the CLI to end; whether it did.
    bool detachAndWait(int ms);

    // The memlens-cli beside this program (the build and the install put both in one folder),
    // else the one on PATH; empty when there is none.
    static QString findCli();
    // Where attached sessions go: the user's data folder (…/memlens), else the temporary folder.
    static QString defaultDirectory();
    // A fresh session file in DIR: memlens-attach-PID-YYYYMMDD-HHMMSS.memlens (-2, -3… when taken).
    static QString freshOutput(const QString& dir, qint64 pid);

signals:
    void attached(const QString& output);
    // ERROR: empty when the CLI exited 0, else one line saying why it failed.
    void finished(const QString& error);

private:
    void readStderr(bool atEnd);
    void onFinished(int exitCode, bool crashed);

    QProcess* m_process = nullptr;
    qint64 m_pid = 0;
    QString m_output;
    QByteArray m_partial;  // stderr after its last newline
    QString m_lastLine;    // its last non-empty line
    bool m_attached = false;
};

}  // namespace memlens::gui
