#include "AttachDialog.h"

#include "TorchProcesses.h"
#include "common/ByteText.h"

#include "memlens/model/SessionFile.h"

#include <QDialogButtonBox>
#include <QDir>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QGroupBox>
#include <QHeaderView>
#include <QLabel>
#include <QListWidget>
#include <QPushButton>
#include <QSet>
#include <QTreeWidget>
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
            qint64 jobPid = 0;
            try {
                const model::SessionFile f(target.toStdString());
                // readers (other windows, `memlens-cli session --follow`) have it open too: only
                // the writer's entry counts
                if (!f.live() || (f.writerPid() > 0 && f.writerPid() != n)) continue;
                jobPid = f.process().pid;
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
            out.append({target, n, command, jobPid});
        }
    }
    return out;
}

AttachDialog::AttachDialog(const QSet<qint64>& attached, QWidget* parent) : QDialog(parent), m_attached(attached) {
    setWindowTitle(tr("Attach"));
    setObjectName(QStringLiteral("attachDialog"));
    auto* v = new QVBoxLayout(this);

    auto* sessions = new QGroupBox(tr("Sessions being recorded"), this);
    auto* sv = new QVBoxLayout(sessions);
    auto* label = new QLabel(tr("Sessions that memlens-cli record or attach is writing on this machine, by your user. "
                                "Open follows the one you pick while the job runs."),
                             sessions);
    label->setWordWrap(true);
    sv->addWidget(label);
    m_list = new QListWidget(sessions);
    m_list->setObjectName(QStringLiteral("recordingList"));
    sv->addWidget(m_list);
    v->addWidget(sessions);

    auto* processes = new QGroupBox(tr("PyTorch processes"), this);
    auto* pv = new QVBoxLayout(processes);
    auto* plabel =
        new QLabel(tr("Your running processes that have loaded torch and are not recorded. Attach records one "
                      "from now on (memlens-cli attach) and follows it; File > Detach stops, and the job keeps running."),
                   processes);
    plabel->setWordWrap(true);
    pv->addWidget(plabel);
    m_processes = new QTreeWidget(processes);
    m_processes->setObjectName(QStringLiteral("torchProcessList"));
    m_processes->setRootIsDecorated(false);
    m_processes->setHeaderLabels({tr("PID"), tr("GPU memory"), tr("Command")});
    m_processes->header()->setSectionResizeMode(0, QHeaderView::ResizeToContents);
    m_processes->header()->setSectionResizeMode(1, QHeaderView::ResizeToContents);
    pv->addWidget(m_processes);
    v->addWidget(processes);

    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Cancel, this);
    m_open = buttons->addButton(QDialogButtonBox::Open);
    m_open->setObjectName(QStringLiteral("openSessionButton"));
    m_attach = buttons->addButton(tr("Attach"), QDialogButtonBox::ActionRole);
    m_attach->setObjectName(QStringLiteral("attachProcessButton"));
    QPushButton* refreshButton = buttons->addButton(tr("Refresh"), QDialogButtonBox::ActionRole);
    QPushButton* browse = buttons->addButton(tr("Browse…"), QDialogButtonBox::ActionRole);
    connect(refreshButton, &QPushButton::clicked, this, &AttachDialog::refresh);
    connect(browse, &QPushButton::clicked, this, [this] {
        const QString f = QFileDialog::getOpenFileName(this, tr("Follow a Session"), QString(), tr("memlens sessions (*.memlens);;All files (*)"));
        if (f.isEmpty()) return;
        m_path = f;
        accept();
    });
    connect(m_open, &QPushButton::clicked, this, [this] {
        if (QListWidgetItem* it = m_list->currentItem(); it && !it->data(Qt::UserRole).toString().isEmpty()) {
            m_path = it->data(Qt::UserRole).toString();
            accept();
        }
    });
    connect(m_attach, &QPushButton::clicked, this, &AttachDialog::attachCurrent);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    connect(m_list, &QListWidget::itemDoubleClicked, this, [this](QListWidgetItem* it) {
        m_path = it->data(Qt::UserRole).toString();
        if (!m_path.isEmpty()) accept();
    });
    connect(m_processes, &QTreeWidget::itemDoubleClicked, this, &AttachDialog::attachCurrent);
    connect(m_list, &QListWidget::currentItemChanged, this,
            [this](QListWidgetItem* it) { m_open->setEnabled(it && !it->data(Qt::UserRole).toString().isEmpty()); });
    connect(m_processes, &QTreeWidget::currentItemChanged, this,
            [this](QTreeWidgetItem* it) { m_attach->setEnabled(it && it->data(0, Qt::UserRole).toLongLong() > 0); });
    v->addWidget(buttons);
    resize(720, 480);
    refresh();
}

int AttachDialog::sessionCount() const {
    int n = 0;
    for (int i = 0; i < m_list->count(); ++i) n += !m_list->item(i)->data(Qt::UserRole).toString().isEmpty();
    return n;
}

int AttachDialog::processCount() const {
    int n = 0;
    for (int i = 0; i < m_processes->topLevelItemCount(); ++i)
        n += m_processes->topLevelItem(i)->data(0, Qt::UserRole).toLongLong() > 0;
    return n;
}

void AttachDialog::attachCurrent() {
    QTreeWidgetItem* it = m_processes->currentItem();
    const qint64 pid = it ? it->data(0, Qt::UserRole).toLongLong() : 0;
    if (pid <= 0) return;
    m_path.clear();
    m_pid = pid;
    accept();
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
    m_open->setEnabled(!found.isEmpty());
    refreshProcesses(found);
}

void AttachDialog::refreshProcesses(const QVector<RecordingSession>& sessions) {
    m_processes->clear();
    // a job being recorded is listed as its session, and a job this window is attached to too
    QSet<qint64> exclude = m_attached;
    for (const RecordingSession& s : sessions)
        if (s.jobPid > 0) exclude.insert(s.jobPid);
    const QVector<TorchProcess> found = findTorchProcesses(exclude);
    for (const TorchProcess& p : found) {
        auto* it = new QTreeWidgetItem(m_processes);
        it->setText(0, QString::number(p.pid));
        it->setText(1, p.gpuMemory ? views::formatBytes(static_cast<double>(*p.gpuMemory)) : tr("n/a"));
        it->setToolTip(1, p.gpuMemory ? tr("GPU memory: %1 (NVML)").arg(views::formatBytes(static_cast<double>(*p.gpuMemory)))
                                      : tr("GPU memory: n/a (NVML does not answer on this machine)"));
        it->setText(2, p.command);
        it->setToolTip(2, p.command);
        it->setData(0, Qt::UserRole, p.pid);
    }
    if (found.isEmpty()) {
        auto* it = new QTreeWidgetItem(m_processes);
        it->setText(2, tr("No other process of yours has loaded torch."));
        it->setFlags(Qt::NoItemFlags);
    } else {
        m_processes->setCurrentItem(m_processes->topLevelItem(0));
    }
    m_attach->setEnabled(!found.isEmpty());
}

} // namespace memlens::gui
