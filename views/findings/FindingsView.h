#pragma once
// "Findings": the doctor's verdict on the open file (model/SnapshotDoctor.h, SessionDoctor.h),
// worked out off the GUI thread (cancellable, stale results dropped) when a document is set or
// its device changes. The summary's two sentences (nvidia-smi, batch size) on top, the findings
// in a table (most severe first), the selected one's evidence, references, stack and fix below.
// Selecting a finding selects its evidence in the document: its allocation stack (Stack view),
// its blocks (marked in the block map), the range from its first evidence allocation to the end
// or its out-of-memory entry (timeline and events). "What if this were fixed?" hands the
// finding's fix (FindingFix.h) to the What-if dock.
#include "memlens/model/Finding.h"
#include "memlens/model/FindingFix.h"

#include <QString>
#include <QWidget>

#include <memory>

class QLabel;
class QPushButton;
class QTableWidget;
class QTextBrowser;

namespace memlens::views {

class JobTracker;
class SnapshotDocument;

class FindingsView : public QWidget {
    Q_OBJECT
public:
    explicit FindingsView(QWidget* parent = nullptr);
    ~FindingsView() override;

    // SESSIONPATH: the session file DOC was opened from (its agent's records are read too);
    // empty for a plain snapshot.
    void setDocument(SnapshotDocument* doc, const QString& sessionPath = {});
    SnapshotDocument* document() const { return m_doc; }

    bool isBusy() const;
    // The last report (null before the first one arrived).
    std::shared_ptr<const model::DoctorReport> report() const { return m_report; }
    // "2 findings: ..." for the window's banner; empty when there is none.
    QString bannerText() const;
    int findingCount() const;
    // Selects finding ROW (table order) and its evidence; -1 clears.
    void selectFinding(int row);
    int selectedFinding() const;
    QString detailText() const;
    QString summaryText() const;
    // Whether the selected finding's fix can be replayed ("What if this were fixed?" enabled).
    bool canSimulateFix() const;
    // Clicks "What if this were fixed?".
    void requestFix();

signals:
    // A report arrived (or the document went away): the banner's text may have changed.
    void reportChanged();
    // A finding was selected (the window points out its graph and its iterations).
    void findingSelected(const model::Finding& finding);
    // "What if this were fixed?" on the selected finding (the window runs it in What-if).
    void fixRequested(const model::FindingFix& fix);

private:
    void start();
    void show(std::shared_ptr<const model::DoctorReport> report);
    void showDetail(int row);

    SnapshotDocument* m_doc = nullptr;
    QString m_sessionPath;
    std::unique_ptr<JobTracker> m_jobs;
    std::shared_ptr<const model::DoctorReport> m_report;
    QLabel* m_status = nullptr;
    QLabel* m_summary = nullptr;
    QTableWidget* m_table = nullptr;
    QTextBrowser* m_detail = nullptr;
    QPushButton* m_whatIf = nullptr;
};

} // namespace memlens::views
