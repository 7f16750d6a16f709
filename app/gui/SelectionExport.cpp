#include "SelectionExport.h"

#include "common/ByteText.h"
#include "document/SnapshotDocument.h"

#include "memlens/model/SnapshotSlice.h"

#include <QFileInfo>
#include <QSaveFile>

#include <stdexcept>

namespace memlens::gui {

SelectionExport::SelectionExport(QObject* parent) : QObject(parent) {}

QString SelectionExport::suggestedName(const views::SnapshotDocument& doc) {
    const auto sel = doc.selection();
    const int64_t first = sel ? sel->first : 0, last = sel ? sel->second : doc.entryCount() - 1;
    QString device = QString::fromStdString(model::deviceName(doc.device())).remove(QLatin1Char(':'));
    return QStringLiteral("%1-%2-entries-%3-%4.pickle")
        .arg(QFileInfo(doc.path()).completeBaseName(), device)
        .arg(first)
        .arg(last);
}

void SelectionExport::start(const views::SnapshotDocument& doc, const QString& path) {
    const auto sel = doc.selection();
    const int64_t first = sel ? sel->first : 0, last = sel ? sel->second : doc.entryCount() - 1;
    auto snapshot = doc.loaded().snapshot;
    const int device = doc.device();
    struct Written {
        model::SliceInfo info;
        qint64 bytes = 0;
    };
    views::JobHandlers<Written> h;
    h.done = [this, path, first, last](quint64, Written w) {
        emit finished(tr("Exported entries %1..%2 (%3 entries, %4 segments) to %5 (%6)")
                          .arg(first)
                          .arg(last)
                          .arg(w.info.entries)
                          .arg(w.info.segments)
                          .arg(path, views::formatBytes(static_cast<double>(w.bytes))));
    };
    h.failed = [this](quint64, const QString& message) { emit failed(message); };
    h.cancelled = [](quint64) {};
    m_jobs.start<Written>(
        [snapshot, device, first, last, path](const views::JobControl& control) {
            Written w;
            std::string bytes;
            try {
                bytes = model::sliceSnapshot(*snapshot, device, first, last, &w.info);
            } catch (const std::invalid_argument& e) {
                throw std::runtime_error(e.what());
            }
            control.throwIfCancelled();
            QSaveFile f(path);  // written beside, then renamed: never half a file
            if (!f.open(QIODevice::WriteOnly) ||
                f.write(bytes.data(), static_cast<qint64>(bytes.size())) != static_cast<qint64>(bytes.size()) ||
                !f.commit())
                throw std::runtime_error("cannot write " + path.toStdString() + ": " + f.errorString().toStdString());
            w.bytes = static_cast<qint64>(bytes.size());
            return w;
        },
        std::move(h), views::JobText{QFileInfo(path).fileName(), QStringLiteral("export the selection")});
}

} // namespace memlens::gui
