#pragma once
// File > Attach…: the sessions being recorded on this machine, to follow one live, and the
// running PyTorch processes of this user, to attach to one (memlens-cli attach). The recorder
// keeps no registry; its session file is open in it, so the dialog looks through this user's
// processes (/proc/PID/fd) for open .memlens files whose session is live. "Browse…" picks any
// file (a live one is followed too).
#include <QDialog>
#include <QSet>
#include <QString>
#include <QVector>

class QListWidget;
class QPushButton;
class QTreeWidget;

namespace memlens::gui {

struct RecordingSession {
    QString path;
    qint64 pid = 0;       // the process that has it open (the recorder)
    QString command;      // the job's command line (the recorder's before the job said hello)
    qint64 jobPid = 0;    // the job's pid, once it said hello
};

// The .memlens files open in this user's processes and still live, one entry per file.
QVector<RecordingSession> findRecordingSessions();

class AttachDialog : public QDialog {
    Q_OBJECT
public:
    // ATTACHED: the pids this window is attached to (not offered again).
    explicit AttachDialog(const QSet<qint64>& attached = {}, QWidget* parent = nullptr);
    // What was chosen: a session to follow (Open), or a process to attach to (Attach; 0: none).
    QString selectedPath() const { return m_path; }
    qint64 selectedPid() const { return m_pid; }
    int sessionCount() const;
    int processCount() const;

public slots:
    void refresh();

private:
    void refreshProcesses(const QVector<RecordingSession>& sessions);
    void attachCurrent();

    QSet<qint64> m_attached;
    QListWidget* m_list = nullptr;
    QTreeWidget* m_processes = nullptr;
    QPushButton* m_open = nullptr;
    QPushButton* m_attach = nullptr;
    QString m_path;
    qint64 m_pid = 0;
};

} // namespace memlens::gui
