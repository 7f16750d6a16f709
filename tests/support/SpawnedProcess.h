#pragma once
// A child process for the window tests, started with posix_spawn rather than QProcess (fork):
// clang 14's ThreadSanitizer aborts in its fork handler when a threaded Qt test forks, and the
// tsan preset runs these tests. Its standard output goes to /dev/null or, with
// setStandardOutputFile(), to a file; its standard error to the test's or, with
// setStandardErrorFile(), to a file. Waiting keeps the test's event loop running.
#include <QCoreApplication>
#include <QDeadlineTimer>
#include <QString>
#include <QStringList>
#include <QThread>

#include <csignal>
#include <fcntl.h>
#include <spawn.h>
#include <string>
#include <sys/wait.h>
#include <vector>

extern char** environ;

class SpawnedProcess {
public:
    SpawnedProcess() = default;
    SpawnedProcess(const SpawnedProcess&) = delete;
    SpawnedProcess& operator=(const SpawnedProcess&) = delete;
    ~SpawnedProcess() {
        if (m_pid > 0 && !m_done) {
            ::kill(m_pid, SIGKILL);
            ::waitpid(m_pid, nullptr, 0);
        }
    }

    // Where the child's standard output / error go (truncated); call before start().
    void setStandardOutputFile(const QString& path) { m_stdoutPath = path.toStdString(); }
    void setStandardErrorFile(const QString& path) { m_stderrPath = path.toStdString(); }

    bool start(const QString& program, const QStringList& args) {
        std::vector<std::string> strings{program.toStdString()};
        for (const QString& a : args) strings.push_back(a.toStdString());
        std::vector<char*> argv;
        for (auto& s : strings) argv.push_back(s.data());
        argv.push_back(nullptr);
        posix_spawn_file_actions_t actions;
        posix_spawn_file_actions_init(&actions);
        if (m_stdoutPath.empty()) posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
        else posix_spawn_file_actions_addopen(&actions, 1, m_stdoutPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (!m_stderrPath.empty())
            posix_spawn_file_actions_addopen(&actions, 2, m_stderrPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        const int rc = ::posix_spawn(&m_pid, argv[0], &actions, nullptr, argv.data(), environ);
        posix_spawn_file_actions_destroy(&actions);
        if (rc != 0) m_pid = -1;
        return m_pid > 0;
    }

    qint64 processId() const { return m_pid; }

    // Ends it now (SIGKILL) and reaps it.
    void kill() {
        if (m_pid <= 0 || m_done) return;
        ::kill(m_pid, SIGKILL);
        ::waitpid(m_pid, nullptr, 0);
        m_done = true;
        m_normalExit = false;
        m_exitCode = -1;
    }

    // Whether it ended within MS milliseconds (or had ended before).
    bool waitForFinished(int ms) {
        if (m_done) return true;
        if (m_pid <= 0) return false;
        QDeadlineTimer deadline(ms);
        for (;;) {
            int status = 0;
            const pid_t r = ::waitpid(m_pid, &status, WNOHANG);
            if (r == m_pid) {
                m_done = true;
                m_normalExit = WIFEXITED(status);
                m_exitCode = m_normalExit ? WEXITSTATUS(status) : -1;
                return true;
            }
            if (r < 0 || deadline.hasExpired()) return false;
            QCoreApplication::processEvents(QEventLoop::AllEvents, 20);
            QThread::msleep(5);  // polling the child's state, not waiting for an outcome to assert
        }
    }

    bool normalExit() const { return m_done && m_normalExit; }
    int exitCode() const { return m_exitCode; }

private:
    std::string m_stdoutPath;
    std::string m_stderrPath;
    pid_t m_pid = -1;
    bool m_done = false;
    bool m_normalExit = false;
    int m_exitCode = -1;
};
