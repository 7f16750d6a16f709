#pragma once
// "Iteration diff": what iterations N..M allocated that is still alive at the end of M, grouped
// by allocation stack, as heaptrack's diff: bytes, count, bytes per iteration, the first iteration
// that left some. The iterations are the doctor's (annotations, else the trace's pattern); pick
// them in the two boxes or take them from the timeline's selection. Or another open file: the
// live bytes of each stack at its end against this file's (appeared, grew, shrank, gone; stacks
// matched by their frames). Worked out off the GUI thread; selecting a row selects its stack (and,
// for iterations, marks its surviving blocks in the block map).
#include "memlens/model/IterationDiff.h"
#include "memlens/model/Iterations.h"
#include "memlens/model/StackDiff.h"

#include <QPointer>
#include <QWidget>

#include <memory>

class QComboBox;
class QLabel;
class QPushButton;
class QSpinBox;
class QTableWidget;

namespace memlens::views {

class JobTracker;
class SnapshotDocument;

class IterationDiffView : public QWidget {
    Q_OBJECT
public:
    explicit IterationDiffView(QWidget* parent = nullptr);
    ~IterationDiffView() override;
    void setDocument(SnapshotDocument* doc);

    // The iterations of the document's device (empty before they are known, or when none).
    const model::IterationSplit& iterations() const { return m_split; }
    // Compares iterations FROM..TO (numbers); false when either is not an iteration.
    bool compare(int64_t from, int64_t to);
    // The range of iterations the timeline's selection covers; false when it covers none.
    bool compareSelection();
    // The other open files this one can be compared with (the window keeps the list).
    void setOtherDocuments(QList<SnapshotDocument*> others);
    // Compares this file's live memory at its end with OTHER's (this is A, OTHER is B).
    bool compareWith(SnapshotDocument* other);
    std::shared_ptr<const std::vector<model::StackDelta>> fileDiff() const { return m_fileDiff; }
    bool isBusy() const;
    std::shared_ptr<const model::Survivors> result() const { return m_result; }
    int rowCount() const;
    void selectRow(int row);
    QString statusText() const;

signals:
    void finished();

private:
    void start();
    void showResult(std::shared_ptr<const model::Survivors> result);
    void showFileDiff(std::shared_ptr<const std::vector<model::StackDelta>> deltas, SnapshotDocument* other);

    SnapshotDocument* m_doc = nullptr;
    model::IterationSplit m_split;
    std::shared_ptr<const model::Survivors> m_result;
    std::shared_ptr<const std::vector<model::StackDelta>> m_fileDiff;  // the last file comparison
    QList<QPointer<SnapshotDocument>> m_others;  // closed ones turn null
    std::unique_ptr<JobTracker> m_jobs;
    QLabel* m_status = nullptr;
    QSpinBox* m_from = nullptr;
    QSpinBox* m_to = nullptr;
    QPushButton* m_compare = nullptr;
    QPushButton* m_fromSelection = nullptr;
    QComboBox* m_otherFiles = nullptr;
    QPushButton* m_compareFiles = nullptr;
    QTableWidget* m_table = nullptr;
};

} // namespace memlens::views
