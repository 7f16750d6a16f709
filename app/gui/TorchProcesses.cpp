#include "TorchProcesses.h"

#include "memlens/capture/Nvml.h"
#include "memlens/capture/ProcessProbe.h"

#include <QDir>

#include <unistd.h>

namespace memlens::gui {

namespace {

// The GPU memory NVML shows for each pid (summed over the devices); nothing when NVML is absent.
void addGpuMemory(QVector<TorchProcess>& found) {
    if (found.isEmpty()) return;
    const std::unique_ptr<capture::Nvml> nvml = capture::Nvml::load();
    if (!nvml) return;
    for (TorchProcess& p : found) {
        std::optional<qint64> bytes;
        for (const capture::Nvml::Reading& r : nvml->read({static_cast<int64_t>(p.pid)}))
            if (r.processUsed) bytes = bytes.value_or(0) + static_cast<qint64>(*r.processUsed);
        p.gpuMemory = bytes;
    }
}

}  // namespace

QVector<TorchProcess> findTorchProcesses(const QSet<qint64>& exclude) {
    QVector<TorchProcess> out;
    const QStringList names = QDir(QStringLiteral("/proc")).entryList(QDir::Dirs | QDir::NoDotAndDotDot);
    for (const QString& name : names) {
        bool ok = false;
        const qint64 pid = name.toLongLong(&ok);
        if (!ok || pid == ::getpid() || exclude.contains(pid)) continue;
        // what memlens-cli attach checks too (capture/ProcessProbe)
        const capture::ProcessProbe probe = capture::probeProcess(pid);
        if (!probe.exists || probe.uid != ::getuid() || !probe.mapsReadable || !probe.torch || probe.recorderSocket)
            continue;
        TorchProcess p;
        p.pid = pid;
        for (const std::string& arg : probe.command)
            p.command += (p.command.isEmpty() ? QString() : QStringLiteral(" ")) + QString::fromLocal8Bit(arg.c_str());
        p.python = probe.python;
        out.append(p);
    }
    addGpuMemory(out);
    return out;
}

}  // namespace memlens::gui
