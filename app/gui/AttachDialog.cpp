#include "AttachDialog.h"

#include "memlens/model/SessionFile.h"

#include <QDialogButtonBox>
#include <QDir>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QLabel>
#include <QListWidget>
#include <QPushButton>
#include <QSet>
#include <QVBoxLayout>

namespace memlens::gui {

QVector<RecordingSession> findRecordingSessions() {
    QVector<RecordingSession> out;
    QSet<QString> seen;
    const QStringList pids = QDir(QStringLiteral("/proc")).entryList(QDir::Dirs | QDir::NoDotAndDotDot);
    for (const QString& pid : pids) {
        bool ok = false;
        const qint64 n = pid.toLongLong(&ok);
        if (!ok) continue;
        // only this user's processes can be read; others are skipped silently
        const QDir fds(QStringLiteral("/proc/%1/fd").arg(pid));
        const QFileInfoList links = fds.entryInfoList(QDir::Files | QDir::System | QDir::NoDotAndDotDot);
        for (const QFileInfo& link : links) {
            const QString target = link.symLinkTarget();
            if (!target.endsWith(QStringLiteral(".memlens")) || seen.contains(target)) continue;
            QString command;
            try {
                const model::SessionFile f(target.toStdString());
                // readers (other windows, `memlens-cli session --follow`) have it open too: only
                // the writer's entry counts
                if (!f.live() || (f.writerPid() > 0 && f.writerPid() != n)) continue;
                for (const std::string& arg : f.process().command)
                    command += (command.isEmpty() ? QString() : QStringLiteral(" ")) + QString::fromStdString(arg);
            } catch (const std::exception&) {
                continue;
            }
            seen.insert(target);
            if (command.isEmpty()) {  // the job has not said hello yet: the recorder's own command line
                QFile cmd(QStringLiteral("/proc/%1/cmdline").arg(pid));
                if (cmd.open(QIODevice::ReadOnly)) command = QString::fromLocal8Bit(cmd.readAll()).replace(QChar(0), QChar(' ')).trimmed();
            }
            out.append({target, n, command});
        }
    }
    return out;
}

AttachDialog::AttachDialog(QWidget* parent) : QDialog(parent) {
    setWindowTitle(tr("Attach to a Recording"));
    setObjectName(QStringLiteral("attachDialog"));
    auto* v = new QVBoxLayout(this);
    auto* label = new QLabel(tr("Sessions being recorded on this machine (memlens-cli record, by your user). "
                                "The window follows the one you pick while the job runs."),
                             this);
    label->setWordWrap(true);
    v->addWidget(label);
    m_list = new QListWidget(this);
    m_list->setObjectName(QStringLiteral("recordingList"));
    v->addWidget(m_list);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Open | QDialogButtonBox::Cancel, this);
    QPushButton* refreshButton = buttons->addButton(tr("Refresh"), QDialogButtonBox::ActionRole);
    QPushButton* browse = buttons->addButton(tr("Browse…"), QDialogButtonBox::ActionRole);
    connect(refreshButton, &QPushButton::clicked, this, &AttachDialog::refresh);
    connect(browse, &QPushButton::clicked, this, [this] {
        const QString f = QFileDialog::getOpenFileName(this, tr("Follow a Session"), QString(), tr("memlens sessions (*.memlens);;All files (*)"));
        if (f.isEmpty()) return;
        m_path = f;
        accept();
    });
    connect(buttons, &QDialogButtonBox::accepted, this, [this] {
        if (QListWidgetItem* it = m_list->currentItem()) {
            m_path = it->data(Qt::UserRole).toString();
            accept();
        }
    });
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    connect(m_list, &QListWidget::itemDoubleClicked, this, [this](QListWidgetItem* it) {
        m_path = it->data(Qt::UserRole).toString();
        accept();
    });
    v->addWidget(buttons);
    resize(640, 320);
    refresh();
}

int AttachDialog::sessionCount() const {
    int n = 0;
    for (int i = 0; i < m_list->count(); ++i) n += !m_list->item(i)->data(Qt::UserRole).toString().isEmpty();
    return n;
}

void AttachDialog::refresh() {
    m_list->clear();
    const QVector<RecordingSession> found = findRecordingSessions();
    for (const RecordingSession& s : found) {
        auto* it = new QListWidgetItem(tr("%1 — pid %2: %3").arg(QFileInfo(s.path).fileName()).arg(s.pid).arg(s.command), m_list);
        it->setData(Qt::UserRole, s.path);
        it->setToolTip(s.path);
    }
    if (found.isEmpty()) {
        auto* it = new QListWidgetItem(tr("No session is being recorded by your user on this machine. Browse… picks a file."), m_list);
        it->setFlags(Qt::NoItemFlags);
    } else {
        m_list->setCurrentRow(0);
    }
}

} // namespace memlens::gui
