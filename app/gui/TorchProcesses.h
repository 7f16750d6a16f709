#pragma once
// The running processes of this user that have loaded torch, for File > Attach: found in /proc
// (a mapping of libtorch*.so or torch/_C.*.so in /proc/PID/maps), with their command line and,
// where NVML answers, the GPU memory they use. Processes already recorded (MEMLENS_SOCKET in
// their environment: `memlens-cli record` started them) are left out; they are sessions.
#include <QSet>
#include <QString>
#include <QVector>

#include <optional>

namespace memlens::gui {

struct TorchProcess {
    qint64 pid = 0;
    QString command;                  // /proc/PID/cmdline, arguments joined by spaces
    bool python = false;              // the executable is python*, or libpython is mapped
    std::optional<qint64> gpuMemory;  // bytes on all devices, when NVML answers
};

// This user's processes with torch loaded, by pid; this process and those in EXCLUDE left out.
// Unreadable processes are skipped silently.
QVector<TorchProcess> findTorchProcesses(const QSet<qint64>& exclude = {});

}  // namespace memlens::gui
