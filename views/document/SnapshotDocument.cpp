#include "document/SnapshotDocument.h"

#include <QFileInfo>

#include <algorithm>
#include <chrono>
#include <future>
#include <utility>

namespace memlens::views {

DocumentSession::DocumentSession(SnapshotDocument* doc) : QObject(doc) {
    if (doc) doc->m_session = this;
}

DocumentSession::~DocumentSession() {
    if (auto* doc = qobject_cast<SnapshotDocument*>(parent()); doc && doc->m_session == this) doc->m_session = nullptr;
}

SnapshotDocument::SnapshotDocument(std::shared_ptr<const LoadedSnapshot> loaded, QObject* parent)
    : QObject(parent), m_loaded(std::move(loaded)), m_histories(m_loaded->histories),
      m_lifetimes(m_loaded->lifetimes), m_timelineExtras(m_loaded->timelineExtras) {
    // open the device with the longest trace, as PyTorch's viewer does; else the first with segments;
    // a GPU before the pinned host memory
    auto devs = devices();
    if (devs.size() > 1) devs.removeAll(model::kHostDevice);
    if (!devs.isEmpty()) {
        m_device = devs.front();
        size_t best = 0;
        for (int d : devs) {
            const auto* dd = snapshot().device(d);
            if (dd && dd->trace.rows() > best) {
                best = dd->trace.rows();
                m_device = d;
            }
        }
    }
    m_current = entryCount() - 1;
    // StateHistories::Later: the final states (being computed since the timelines were), the
    // lifetimes (the timeline's bands), then the histories. One job after the other, not side by
    // side: the window draws its first picture meanwhile, and with a third busy thread on two
    // cores the time from the document's arrival to the drawn timeline went from 70-95 to
    // 150-250 ms on the 605 MB repeated real trace.
    if (m_loaded->finalStatesLater.valid()) {
        m_rewinding = m_histories.empty();
        takeFinalStates();
    }
}

// The load's final states: taken at once when they are there already (a small file), else
// waited for on the job pool (isStatePending meanwhile). Then (or failed: out of memory, the
// history gives the state when asked) the lifetimes, then the histories.
void SnapshotDocument::takeFinalStates() {
    const auto& later = m_loaded->finalStatesLater;
    const auto next = [this](bool pending) {
        m_statePending = false;
        m_state.reset();
        if (pending) emit stateReady();
        if (m_lifetimes.empty()) pairLifetimes();
        else if (m_rewinding) buildHistories();
    };
    if (later.wait_for(std::chrono::seconds(0)) == std::future_status::ready) {
        try {
            m_finalStates = later.get();
        } catch (const std::exception&) {  // out of memory: from the history
        }
        next(false);
        return;
    }
    // The job's share of the future is dropped on the pool: a document closed meanwhile does not
    // wait on the GUI thread for the thread still making the states.
    m_statePending = true;
    JobHandlers<LoadedSnapshot::FinalStates> h;
    h.done = [this, next](quint64, LoadedSnapshot::FinalStates states) {
        m_finalStates = std::move(states);
        next(true);
    };
    h.failed = [next](quint64, const QString&) { next(true); };
    m_finalStateJobs.start<LoadedSnapshot::FinalStates>(
        [later = m_loaded->finalStatesLater](const JobControl&) { return later.get(); }, std::move(h),
        JobText{fileName(), QStringLiteral("read the allocator state after the last entry")});
}

QString SnapshotDocument::statePendingText() { return tr("Reading the allocator state after the last entry\u2026"); }

std::shared_ptr<const model::DeviceState> SnapshotDocument::finalStateOf(int device) const {
    auto it = m_finalStates.find(device);
    return it != m_finalStates.end() ? it->second : nullptr;
}

// The order the background jobs take the devices in: the shown one first, then the file's others.
std::vector<int> SnapshotDocument::devicesShownFirst() const {
    std::vector<int> order{m_device};
    for (const auto& d : snapshot().devices)
        if (d.device != m_device) order.push_back(d.device);
    return order;
}

// The shown device's first. Out of memory, the timeline stays without bands.
void SnapshotDocument::pairLifetimes() {
    using Lifetimes = std::map<int, std::shared_ptr<const AllocationLifetimes>>;
    const std::vector<int> order = devicesShownFirst();
    JobHandlers<Lifetimes> h;
    h.done = [this](quint64, Lifetimes paired) {
        for (auto& [device, lifetimes] : paired) m_lifetimes[device] = std::move(lifetimes);
        emit lifetimesReady();
        if (m_rewinding) buildHistories();
    };
    h.failed = [this](quint64, const QString&) {
        if (m_rewinding) buildHistories();
    };
    m_lifetimeJobs.start<Lifetimes>(
        [loaded = m_loaded, order](const JobControl& job) {
            Lifetimes out;
            for (int d : order) {
                job.throwIfCancelled();
                if (const model::DeviceData* data = loaded->snapshot->device(d))
                    out[d] = std::make_shared<const AllocationLifetimes>(AllocationLifetimes::compute(*data));
            }
            return out;
        },
        std::move(h), JobText{fileName(), QStringLiteral("pair this file's allocations")});
}

void SnapshotDocument::buildHistories() {
    using Histories = std::map<int, std::shared_ptr<const model::StateHistory>>;
    const std::vector<int> order = devicesShownFirst();
    JobHandlers<Histories> h;
    const auto finish = [this] {
        m_rewinding = false;
        if (auto pending = std::exchange(m_pendingCurrent, std::nullopt)) setCurrentEvent(*pending);
        emit historiesReady();
    };
    h.done = [this, finish](quint64, Histories built) {
        for (auto& [device, history] : built) {
            auto& mine = m_histories[device];
            if (!mine) mine = std::move(history);  // one history() built meanwhile stays (views may hold it)
        }
        finish();
    };
    // out of memory: history() builds the shown device's own when asked
    h.failed = [finish](quint64, const QString&) { finish(); };
    m_historyJobs.start<Histories>(
        [loaded = m_loaded, order](const JobControl& job) {
            Histories out;
            for (int d : order) {
                job.throwIfCancelled();
                out[d] = std::make_shared<const model::StateHistory>(*loaded->snapshot, d);
            }
            return out;
        },
        std::move(h), JobText{fileName(), QStringLiteral("rewind this file")});
}

QString SnapshotDocument::path() const { return QString::fromStdString(m_loaded->path); }
QString SnapshotDocument::fileName() const { return QFileInfo(path()).fileName(); }

QVector<int> SnapshotDocument::devices() const {
    QVector<int> out;
    for (const auto& d : snapshot().devices)
        if (!d.segments.empty() || d.trace.rows() > 0) out.push_back(d.device);
    return out;
}

const model::DeviceData& SnapshotDocument::deviceData() const {
    const auto* d = snapshot().device(m_device);
    return d ? *d : m_emptyDevice;
}

const model::DeviceTimeline& SnapshotDocument::timeline() const {
    auto it = m_loaded->timelines.find(m_device);
    return it != m_loaded->timelines.end() ? *it->second : m_emptyTimeline;
}

const model::StateHistory& SnapshotDocument::history() const {
    auto& h = m_histories[m_device];
    if (!h) h = std::make_shared<const model::StateHistory>(snapshot(), m_device);
    return *h;
}

model::DeviceState SnapshotDocument::finalState() const {
    if (auto f = finalStateOf(m_device)) return *f;
    if (m_statePending) return pendingState();
    return history().stateAfter(entryCount() - 1);
}

// What currentState() gives while the final states are still to come: an empty state at the
// current entry (views ask isStatePending() first and say that it comes).
model::DeviceState SnapshotDocument::pendingState() const {
    model::DeviceState st;
    st.device = m_device;
    st.at = m_current;
    return st;
}

const AllocationLifetimes& SnapshotDocument::lifetimes() const {
    auto it = m_lifetimes.find(m_device);
    return it != m_lifetimes.end() ? *it->second : m_emptyLifetimes;
}

const TimelineExtras& SnapshotDocument::timelineExtras() const {
    auto& x = m_timelineExtras[m_device];
    if (!x) {
        auto it = m_loaded->timelineExtras.find(m_device);
        x = it != m_loaded->timelineExtras.end()
                ? it->second
                : std::make_shared<const TimelineExtras>(TimelineExtras::compute(snapshot(), m_device, timeline()));
    }
    return *x;
}

int64_t SnapshotDocument::entryCount() const { return static_cast<int64_t>(deviceData().trace.rows()); }

const model::DeviceState& SnapshotDocument::currentState() const { return *currentStateShared(); }

std::shared_ptr<const model::DeviceState> SnapshotDocument::currentStateShared() const {
    // One cached state, made again when the entry or the device changed. While the final states
    // come, an empty one, kept like the others: currentState() hands out a reference to it
    // (takeFinalStates drops it once they are there). The last entry's state needs no history
    // (while rewinding, the current entry is the last).
    if (m_state && m_state->at == m_current && m_state->device == m_device) return m_state;
    const bool last = m_current == entryCount() - 1;
    if (m_statePending)
        m_state = std::make_shared<const model::DeviceState>(pendingState());
    else if (auto loaded = last ? finalStateOf(m_device) : nullptr)
        m_state = std::move(loaded);
    else
        m_state = std::make_shared<const model::DeviceState>(last ? finalState() : history().stateAfter(m_current));
    return m_state;
}

std::optional<std::pair<int64_t, int64_t>> SnapshotDocument::selection() const {
    if (m_selections.isEmpty()) return std::nullopt;
    return m_selections.back();
}

void SnapshotDocument::setDevice(int device) {
    if (device == m_device) return;
    m_device = device;
    m_pendingCurrent.reset();
    m_state.reset();
    m_selections.clear();
    m_current = entryCount() - 1;
    emit deviceChanged(device);
    emit selectionChanged();
    emit currentEventChanged(m_current);
}

void SnapshotDocument::setCurrentEvent(int64_t index) {
    index = std::clamp<int64_t>(index, -1, std::max<int64_t>(-1, entryCount() - 1));
    if (isRewinding()) {
        m_pendingCurrent = index;
        return;
    }
    if (index == m_current) return;
    m_current = index;
    emit currentEventChanged(index);
}

void SnapshotDocument::setSelection(int64_t first, int64_t last) {
    if (first > last) std::swap(first, last);
    first = std::max<int64_t>(first, 0);
    last = std::min<int64_t>(last, entryCount() - 1);
    if (first > last) return;
    if (!m_selections.isEmpty() && m_selections.back() == std::make_pair(first, last)) return;
    m_selections.push_back({first, last});
    emit selectionChanged();
}

void SnapshotDocument::back() {
    if (m_selections.isEmpty()) return;
    m_selections.pop_back();
    emit selectionChanged();
}

void SnapshotDocument::resetSelection() {
    if (m_selections.isEmpty()) return;
    m_selections.clear();
    emit selectionChanged();
}

void SnapshotDocument::setMarkedAddresses(MarkedAddresses marked) {
    m_marked = std::move(marked);
    emit markedAddressesChanged();
}

std::vector<uint64_t> SnapshotDocument::markedOnDevice() const {
    std::vector<uint64_t> out;
    for (const auto& [device, address] : m_marked.addresses)
        if (device == m_device) out.push_back(address);
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
}

void SnapshotDocument::selectAllocation(model::StackId stack, const QString& description, std::optional<uint64_t> address) {
    m_selectedStack = stack;
    m_selectedDescription = description;
    m_selectedAddress = address;
    emit allocationSelected(stack, description);
}

} // namespace memlens::views
