#pragma once
// One opened snapshot as the views see it: which device is shown, which trace entry is current,
// which range is selected. Every view reads from here and follows its signals.
#include "core/LoadedSnapshot.h"
#include "core/TimelineMarkers.h"
#include "document/JobTracker.h"

#include <QObject>
#include <QString>
#include <QVector>

#include <map>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

namespace memlens::views {

class SnapshotDocument;

// What a document was opened from besides its snapshot (the window's session of a .memlens
// file): a child of the document, which knows it by type (SnapshotDocument::session()).
class DocumentSession : public QObject {
    Q_OBJECT
public:
    explicit DocumentSession(SnapshotDocument* doc);
    ~DocumentSession() override;
};

class SnapshotDocument : public QObject {
    Q_OBJECT
public:
    explicit SnapshotDocument(std::shared_ptr<const LoadedSnapshot> loaded, QObject* parent = nullptr);

    const LoadedSnapshot& loaded() const { return *m_loaded; }
    // The same, shared: for work on other threads that must keep the data alive.
    std::shared_ptr<const LoadedSnapshot> sharedLoaded() const { return m_loaded; }
    const model::Snapshot& snapshot() const { return *m_loaded->snapshot; }
    QString path() const;
    QString fileName() const;

    // Devices that own a segment or have trace entries, ascending.
    QVector<int> devices() const;
    int device() const { return m_device; }
    const model::DeviceData& deviceData() const;
    const model::DeviceTimeline& timeline() const;
    // The shown device's state history. A file loaded with StateHistories::Later (the window's)
    // builds its histories on the job pool once the document exists: until historiesReady(),
    // views ask isRewinding() first; history() itself then builds the device's history here.
    const model::StateHistory& history() const;
    bool isRewinding() const { return m_rewinding; }
    // Every device's history built so far: for jobs that read them off the GUI thread.
    std::map<int, std::shared_ptr<const model::StateHistory>> histories() const { return m_histories; }
    // The state after the shown device's last entry (without the history where the load has it).
    model::DeviceState finalState() const;
    // A file loaded with StateHistories::Later (the window's) arrives before its final states:
    // until stateReady(), no state can be shown without rewinding here on the GUI thread, and
    // views that show one say that it comes (currentState() meanwhile: an empty state).
    bool isStatePending() const { return m_statePending; }
    // What a view that shows the state says meanwhile (one sentence, for a placeholder).
    static QString statePendingText();
    // The final state of the device, when the load made it (null: pending, or not made).
    std::shared_ptr<const model::DeviceState> finalStateOf(int device) const;
    // The device's allocations paired alloc -> free: computed while loading, or for a file loaded
    // with StateHistories::Later (the window's) on the job pool once the document exists, empty
    // until lifetimesReady() (the timeline draws its curves first, its bands then).
    const AllocationLifetimes& lifetimes() const;
    bool isPairing() const { return m_lifetimeJobs.isRunning(); }
    // The device's annotation ranges and oom / snapshot entries.
    const TimelineMarkers& markers() const { return timelineExtras().markers; }
    // What else the timeline draws (computed while loading; else on first use).
    const TimelineExtras& timelineExtras() const;
    int64_t entryCount() const;

    // The current trace entry: every view shows the state right after it (-1: before the first).
    // While the histories are built (isRewinding) it stays at the last entry: a new one asked
    // for meanwhile takes effect once they are ready.
    int64_t currentEvent() const { return m_current; }
    // The allocator state right after the current entry (cached).
    const model::DeviceState& currentState() const;
    // The same, shared: the last entry's is the one the load computed, not a copy of it.
    std::shared_ptr<const model::DeviceState> currentStateShared() const;

    // The selected range of entries [first, last], if any. Selections stack up; back() returns
    // to the previous one.
    std::optional<std::pair<int64_t, int64_t>> selection() const;
    bool canGoBack() const { return !m_selections.empty(); }

    // The allocation the user picked last (in the timeline, block map, events or sites): its stack
    // and a one-line description. The stack view shows it.
    model::StackId selectedStack() const { return m_selectedStack; }
    QString selectedDescription() const { return m_selectedDescription; }
    // The address of the selected allocation's block, when the selection named one (the block map
    // outlines it).
    std::optional<uint64_t> selectedAddress() const { return m_selectedAddress; }

    // Addresses the block map points out, and what holds them: the CUDA storages of the retained
    // graph selected in a session ("held by validate.kept_outputs[3]"). (device, address) pairs.
    struct MarkedAddresses {
        QString holder;
        std::vector<std::pair<int, uint64_t>> addresses;
    };
    const MarkedAddresses& markedAddresses() const { return m_marked; }
    // The marked addresses on the shown device, ascending.
    std::vector<uint64_t> markedOnDevice() const;

    // The session the document was opened from (null: a plain snapshot); the window's type.
    DocumentSession* session() const { return m_session; }

public slots:
    void setDevice(int device);
    void setCurrentEvent(int64_t index);
    void setSelection(int64_t first, int64_t last);
    void back();
    void resetSelection();
    void selectAllocation(model::StackId stack, const QString& description, std::optional<uint64_t> address = std::nullopt);
    void setMarkedAddresses(MarkedAddresses marked);

signals:
    void deviceChanged(int device);
    void currentEventChanged(int64_t index);
    void selectionChanged();
    void allocationSelected(model::StackId stack, const QString& description);
    void markedAddressesChanged();
    // The final states are there (StateHistories::Later): the current state can be shown now.
    void stateReady();
    // The state histories are built (StateHistories::Later): every entry can be shown now.
    void historiesReady();
    // The allocations' lifetimes are paired (StateHistories::Later).
    void lifetimesReady();

private:
    friend class DocumentSession;
    std::shared_ptr<const LoadedSnapshot> m_loaded;
    void takeFinalStates();
    void pairLifetimes();
    void buildHistories();
    std::vector<int> devicesShownFirst() const;
    model::DeviceState pendingState() const;

    DocumentSession* m_session = nullptr;
    int m_device = 0;
    int64_t m_current = -1;
    std::optional<int64_t> m_pendingCurrent;  // asked for while rewinding
    mutable std::map<int, std::shared_ptr<const model::StateHistory>> m_histories;
    JobTracker m_historyJobs{this};
    LoadedSnapshot::FinalStates m_finalStates;
    JobTracker m_finalStateJobs{this};
    bool m_statePending = false;  // the final states are still to come
    bool m_rewinding = false;  // the histories are still to come (their job may not have started)
    std::map<int, std::shared_ptr<const AllocationLifetimes>> m_lifetimes;
    JobTracker m_lifetimeJobs{this};
    QVector<std::pair<int64_t, int64_t>> m_selections;
    model::StackId m_selectedStack = 0;
    QString m_selectedDescription;
    std::optional<uint64_t> m_selectedAddress;
    MarkedAddresses m_marked;
    mutable std::shared_ptr<const model::DeviceState> m_state;
    model::DeviceData m_emptyDevice;
    model::DeviceTimeline m_emptyTimeline;
    AllocationLifetimes m_emptyLifetimes;
    mutable std::map<int, std::shared_ptr<const TimelineExtras>> m_timelineExtras;
};

} // namespace memlens::views
