#pragma once
// File > Export Selection: the document's selected range as a smaller snapshot that PyTorch's
// memory_viz opens (model::sliceSnapshot, as `memlens-cli slice`), cut and written on the job pool.
#include "document/JobTracker.h"

#include <QObject>
#include <QString>

namespace memlens::views {
class SnapshotDocument;
}

namespace memlens::gui {

class SelectionExport : public QObject {
    Q_OBJECT
public:
    explicit SelectionExport(QObject* parent = nullptr);
    // The file name offered for the document's selection: "<stem>-cuda0-entries-A-B.pickle".
    static QString suggestedName(const views::SnapshotDocument& doc);
    // Cuts entries [first, last] of the document's device into PATH (written beside it, then
    // renamed). Emits finished or failed.
    void start(const views::SnapshotDocument& doc, const QString& path);
    bool isRunning() const { return m_jobs.isRunning(); }

signals:
    void finished(const QString& message);
    void failed(const QString& message);

private:
    views::JobTracker m_jobs{this};
};

} // namespace memlens::gui
