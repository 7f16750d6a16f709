#pragma once
// File > Attach…: the sessions being recorded on this machine, to follow one live. The recorder
// keeps no registry; its session file is open in it, so the dialog looks through this user's
// processes (/proc/PID/fd) for open .memlens files whose session is live. "Browse…" picks any
// file (a live one is followed too).
#include <QDialog>
#include <QString>
#include <QVector>

class QListWidget;

namespace memlens::gui {

struct RecordingSession {
    QString path;
    qint64 pid = 0;       // the process that has it open (the recorder)
    QString command;      // the job's command line (the recorder's before the job said hello)
};

// The .memlens files open in this user's processes and still live, one entry per file.
QVector<RecordingSession> findRecordingSessions();

class AttachDialog : public QDialog {
    Q_OBJECT
public:
    explicit AttachDialog(QWidget* parent = nullptr);
    QString selectedPath() const { return m_path; }
    int sessionCount() const;

public slots:
    void refresh();

private:
    QListWidget* m_list = nullptr;
    QString m_path;
};

} // namespace memlens::gui
