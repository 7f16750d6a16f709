#include "TorchProcesses.h"

#include "memlens/capture/Nvml.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>

#include <sys/stat.h>
#include <unistd.h>

namespace memlens::gui {

namespace {

QByteArray readProcFile(qint64 pid, const char* name) {
    QFile f(QStringLiteral("/proc/%1/%2").arg(pid).arg(QLatin1String(name)));
    // /proc files report size 0: read until the end
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

bool ownedByMe(qint64 pid) {
    struct stat st {};
    return ::stat(QStringLiteral("/proc/%1").arg(pid).toLocal8Bit().constData(), &st) == 0 && st.st_uid == ::getuid();
}

// Whether the environment (NUL-separated) sets MEMLENS_SOCKET: `memlens-cli record` runs it.
bool recorded(const QByteArray& environ) {
    for (const QByteArray& var : environ.split('\0'))
        if (var.startsWith("MEMLENS_SOCKET=")) return true;
    return false;
}

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

bool isTorchLibrary(const QString& mappedPath) {
    const QString name = mappedPath.mid(mappedPath.lastIndexOf(QLatin1Char('/')) + 1);
    if (name.startsWith(QLatin1String("libtorch")) && name.contains(QLatin1String(".so"))) return true;
    return name.startsWith(QLatin1String("_C.")) && name.contains(QLatin1String(".so")) &&
           mappedPath.contains(QLatin1String("/torch/_C."));
}

QVector<TorchProcess> findTorchProcesses(const QSet<qint64>& exclude) {
    QVector<TorchProcess> out;
    const QStringList names = QDir(QStringLiteral("/proc")).entryList(QDir::Dirs | QDir::NoDotAndDotDot);
    for (const QString& name : names) {
        bool ok = false;
        const qint64 pid = name.toLongLong(&ok);
        if (!ok || pid == ::getpid() || exclude.contains(pid) || !ownedByMe(pid)) continue;
        const QByteArray maps = readProcFile(pid, "maps");
        bool torch = false, libpython = false;
        for (const QByteArray& line : maps.split('\n')) {
            const int slash = line.indexOf('/');  // the path column: the first '/' of the line
            if (slash < 0) continue;
            const QString path = QString::fromLocal8Bit(line.mid(slash));
            torch = torch || isTorchLibrary(path);
            libpython = libpython || path.mid(path.lastIndexOf(QLatin1Char('/')) + 1).startsWith(QLatin1String("libpython"));
        }
        if (!torch || recorded(readProcFile(pid, "environ"))) continue;
        TorchProcess p;
        p.pid = pid;
        p.command = QString::fromLocal8Bit(readProcFile(pid, "cmdline")).replace(QChar(0), QChar(' ')).trimmed();
        const QString exe = QFileInfo(QStringLiteral("/proc/%1/exe").arg(pid)).symLinkTarget();
        p.python = libpython || QFileInfo(exe).fileName().startsWith(QLatin1String("python"));
        out.append(p);
    }
    addGpuMemory(out);
    return out;
}

}  // namespace memlens::gui
