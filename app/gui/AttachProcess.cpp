#include "AttachProcess.h"

#include <QCoreApplication>
#include <QDateTime>
#include <QDir>
#include <QFileInfo>
#include <QProcess>
#include <QStandardPaths>

#include <csignal>

namespace memlens::gui {

namespace {
const QByteArray kAttachedLine = QByteArrayLiteral("memlens: attached to ");
}

AttachProcess::AttachProcess(const QString& program, const QStringList& leadingArgs, qint64 pid, const QString& output,
                             QObject* parent)
    : QObject(parent), m_process(new QProcess(this)), m_pid(pid), m_output(output) {
    m_process->setProgram(program);
    m_process->setArguments(leadingArgs +
                            QStringList{QStringLiteral("attach"), QString::number(pid), QStringLiteral("-o"), output});
    m_process->setStandardOutputFile(QProcess::nullDevice());
    connect(m_process, &QProcess::readyReadStandardError, this, [this] { readStderr(false); });
    connect(m_process, &QProcess::finished, this,
            [this](int code, QProcess::ExitStatus status) { onFinished(code, status == QProcess::CrashExit); });
    connect(m_process, &QProcess::errorOccurred, this, [this](QProcess::ProcessError e) {
        if (e == QProcess::FailedToStart)
            emit finished(tr("could not start %1: %2").arg(m_process->program(), m_process->errorString()));
    });
}

AttachProcess::~AttachProcess() {
    // nobody listens any more: detach quietly, then QProcess ends what is still left (SIGKILL)
    m_process->disconnect(this);
    if (isRunning()) detachAndWait(10000);
}

void AttachProcess::start() { m_process->start(); }

qint64 AttachProcess::processId() const { return m_process->processId(); }

bool AttachProcess::isRunning() const { return m_process->state() != QProcess::NotRunning; }

void AttachProcess::detach() {
    if (m_process->state() == QProcess::Running) ::kill(static_cast<pid_t>(m_process->processId()), SIGINT);
}

bool AttachProcess::detachAndWait(int ms) {
    if (!isRunning()) return true;
    detach();
    return m_process->waitForFinished(ms);  // returns as soon as it ended; MS bounds it
}

void AttachProcess::readStderr(bool atEnd) {
    m_partial += m_process->readAllStandardError();
    qsizetype nl;
    while ((nl = m_partial.indexOf('\n')) >= 0 || (atEnd && !m_partial.isEmpty())) {
        const QByteArray line = (nl >= 0 ? m_partial.left(nl) : m_partial).trimmed();
        m_partial.remove(0, nl >= 0 ? nl + 1 : m_partial.size());
        if (line.isEmpty()) continue;
        m_lastLine = QString::fromLocal8Bit(line);
        if (!m_attached && line.startsWith(kAttachedLine)) {
            m_attached = true;
            emit attached(m_output);
        }
    }
}

void AttachProcess::onFinished(int exitCode, bool crashed) {
    readStderr(true);
    const QString what = tr("memlens-cli attach %1").arg(m_pid);
    if (crashed) {
        emit finished(m_lastLine.isEmpty() ? tr("%1 crashed").arg(what) : m_lastLine);
    } else if (exitCode != 0) {
        emit finished(m_lastLine.isEmpty() ? tr("%1 failed (exit status %2)").arg(what).arg(exitCode) : m_lastLine);
    } else if (!m_attached && !QFileInfo::exists(m_output)) {
        emit finished(
            tr("%1 ended without attaching%2").arg(what, m_lastLine.isEmpty() ? QString() : QStringLiteral(": ") + m_lastLine));
    } else {
        if (!m_attached) {  // it ended before the window saw it attach: its session is complete
            m_attached = true;
            emit attached(m_output);
        }
        emit finished(QString());
    }
}

QString AttachProcess::findCli() {
    const QString beside = QDir(QCoreApplication::applicationDirPath()).filePath(QStringLiteral("memlens-cli"));
    if (QFileInfo(beside).isExecutable()) return beside;
    return QStandardPaths::findExecutable(QStringLiteral("memlens-cli"));
}

QString AttachProcess::defaultDirectory() {
    const QString data = QStandardPaths::writableLocation(QStandardPaths::GenericDataLocation);
    if (!data.isEmpty()) {
        const QString dir = QDir(data).filePath(QStringLiteral("memlens"));
        if (QDir().mkpath(dir) && QFileInfo(dir).isWritable()) return dir;
    }
    return QDir::tempPath();
}

QString AttachProcess::freshOutput(const QString& dir, qint64 pid) {
    const QString stem = QStringLiteral("memlens-attach-%1-%2")
                             .arg(pid)
                             .arg(QDateTime::currentDateTime().toString(QStringLiteral("yyyyMMdd-HHmmss")));
    QString path = QDir(dir).filePath(stem + QStringLiteral(".memlens"));
    for (int n = 2; QFileInfo::exists(path); ++n) path = QDir(dir).filePath(QStringLiteral("%1-%2.memlens").arg(stem).arg(n));
    return path;
}

}  // namespace memlens::gui
