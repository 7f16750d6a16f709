#pragma once
// "What if": the document's trace replayed through the allocator simulator with other settings
// (expandable_segments, max_split_size_mb, garbage_collection_threshold,
// roundup_power2_divisions, any PYTORCH_CUDA_ALLOC_CONF key), another device capacity or memory
// fraction, or an edited workload (the survivors of a stack freed at the end of their iteration,
// allocations above a size dropped, forward/backward allocations scaled). A small form, Run off
// the GUI thread (cancellable), the recording and the simulation side by side, and a verdict in
// words. The simulated reserved and live curves can be drawn on the timeline, and the simulated
// state after the current entry shown in the block map (signals; the window connects them).
#include "memlens/model/AllocatorState.h"
#include "memlens/model/FindingFix.h"
#include "memlens/model/SimulatorSettings.h"
#include "memlens/model/WhatIf.h"
#include "memlens/model/WorkloadEdits.h"

#include <QPointer>
#include <QWidget>

#include <memory>
#include <optional>
#include <vector>

class QCheckBox;
class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QPushButton;
class QTableWidget;

namespace memlens::views {

class JobTracker;
class SnapshotDocument;

class WhatIfView : public QWidget {
    Q_OBJECT
public:
    explicit WhatIfView(QWidget* parent = nullptr);
    ~WhatIfView() override;
    void setDocument(SnapshotDocument* doc);
    SnapshotDocument* document() const { return m_doc; }

    // The form, for tests and scripts (the same as typing into it).
    void setExpandableSegments(bool on);
    void setSettingText(const QString& key, const QString& value);  // max_split_size_mb, garbage_collection_threshold, roundup_power2_divisions
    void setOtherSettings(const QString& allocConf);  // "key:value,key:value" as PYTORCH_CUDA_ALLOC_CONF
    void setCapacityText(const QString& text);        // "2 GiB"; empty: from the recording's out-of-memory
    void setFractionText(const QString& text);
    void setFreeStacksText(const QString& text);      // frame substrings, comma-separated
    void setDropAboveText(const QString& text);       // "64 MiB"
    void setScale(double factor);

    // Starts a simulation with the form's values (a running one is superseded). Returns false,
    // with errorText() saying why, when a value is not understood.
    bool run();
    // Starts a simulation of a doctor's finding fixed (the recording's settings otherwise); false,
    // with errorText(), when the finding's fix cannot be replayed.
    bool runFix(const model::FindingFix& fix);
    void cancel();
    bool isBusy() const;

    std::shared_ptr<const model::WhatIfResult> result() const { return m_result; }
    QString verdictText() const;
    QString errorText() const;
    // "setting|recording|simulation" per row of the result table, for tests.
    QStringList rowTexts() const;

    bool drawsOnTimeline() const;
    void setDrawOnTimeline(bool on);
    bool showsInBlockMap() const;
    void setShowInBlockMap(bool on);

signals:
    // A run ended: with a result, an error or cancelled.
    void finished();
    // The simulated reserved and live bytes to draw on the timeline; empty: draw none.
    void simulatedSeriesChanged(std::vector<model::SeriesPoint> series);
    // The simulated state right after the document's current entry; nullptr: show the recording.
    void simulatedStateChanged(std::shared_ptr<const model::DeviceState> state, const QString& label);

private:
    struct Request {
        model::SimulatorSettings settings;
        model::WorkloadEdits edits;
        QString asked;  // what was changed, in words
    };
    std::optional<Request> readForm(QString* error) const;
    bool start(const Request& request);
    void resetForDocument();
    void showResult(std::shared_ptr<const model::WhatIfResult> result, const QString& asked);
    void showError(const QString& message);
    void setBusy(bool busy, const QString& status = {});
    void publishSeries();
    void requestState();

    QPointer<SnapshotDocument> m_doc;
    std::unique_ptr<JobTracker> m_jobs;       // the simulation
    std::unique_ptr<JobTracker> m_stateJobs;  // the simulated state at the current entry
    std::shared_ptr<const model::WhatIfResult> m_result;
    model::WorkloadEdits m_resultEdits;
    QString m_resultAsked;

    QCheckBox* m_expandable = nullptr;
    QLineEdit* m_maxSplit = nullptr;
    QLineEdit* m_gcThreshold = nullptr;
    QLineEdit* m_roundup = nullptr;
    QLineEdit* m_other = nullptr;
    QLineEdit* m_capacity = nullptr;
    QLineEdit* m_fraction = nullptr;
    QLineEdit* m_freeStacks = nullptr;
    QLineEdit* m_dropAbove = nullptr;
    QDoubleSpinBox* m_scale = nullptr;
    QPushButton* m_run = nullptr;
    QPushButton* m_cancel = nullptr;
    QLabel* m_status = nullptr;
    QLabel* m_recordedSettings = nullptr;
    QLabel* m_verdict = nullptr;
    QLabel* m_error = nullptr;
    QTableWidget* m_table = nullptr;
    QCheckBox* m_onTimeline = nullptr;
    QCheckBox* m_inBlockMap = nullptr;
};

} // namespace memlens::views
