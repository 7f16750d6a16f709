#include "events/EventsView.h"

#include "common/ByteText.h"
#include "events/EventsModel.h"
#include "document/SnapshotDocument.h"

#include <QComboBox>
#include <QCoreApplication>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QPointer>
#include <QScrollBar>
#include <QTableView>
#include <QTimer>
#include <QVBoxLayout>

namespace memlens::views {

namespace {

using model::Action;

struct ActionChoice {
    const char* label;
    uint32_t mask;
};

constexpr uint32_t kFrees = EventFilter::bit(Action::FreeRequested) | EventFilter::bit(Action::FreeCompleted) |
                            EventFilter::bit(Action::Free);
constexpr uint32_t kSegments = EventFilter::bit(Action::SegmentAlloc) | EventFilter::bit(Action::SegmentFree) |
                               EventFilter::bit(Action::SegmentMap) | EventFilter::bit(Action::SegmentUnmap);

const ActionChoice kChoices[] = {
    {QT_TRANSLATE_NOOP("EventsView", "All actions"), EventFilter::kAllActions},
    {QT_TRANSLATE_NOOP("EventsView", "alloc"), EventFilter::bit(Action::Alloc)},
    {QT_TRANSLATE_NOOP("EventsView", "Frees"), kFrees},
    {QT_TRANSLATE_NOOP("EventsView", "alloc and frees"), EventFilter::bit(Action::Alloc) | kFrees},
    {QT_TRANSLATE_NOOP("EventsView", "Segment events"), kSegments},
    {QT_TRANSLATE_NOOP("EventsView", "oom"), EventFilter::bit(Action::Oom)},
    {QT_TRANSLATE_NOOP("EventsView", "snapshot"), EventFilter::bit(Action::Snapshot)},
};

bool isBlockEvent(Action a) {
    return a == Action::Alloc || a == Action::FreeRequested || a == Action::FreeCompleted || a == Action::Free;
}

} // namespace

QStringList EventsView::actionChoices() {
    QStringList out;
    for (const auto& c : kChoices) out << tr(c.label);
    return out;
}

EventsView::EventsView(QWidget* parent) : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(0);

    auto* bar = new QWidget(this);
    auto* row = new QHBoxLayout(bar);
    row->setContentsMargins(6, 3, 6, 3);
    row->setSpacing(6);
    m_action = new QComboBox(bar);
    m_action->addItems(actionChoices());
    m_action->setToolTip(tr("Show only entries with these actions"));
    row->addWidget(m_action);
    row->addWidget(new QLabel(tr("Size"), bar));
    m_minSize = new QLineEdit(bar);
    m_minSize->setPlaceholderText(tr("min, e.g. 1 MiB"));
    m_maxSize = new QLineEdit(bar);
    m_maxSize->setPlaceholderText(tr("max"));
    for (QLineEdit* e : {m_minSize, m_maxSize}) {
        e->setClearButtonEnabled(true);
        e->setMinimumWidth(70);
        e->setMaximumWidth(110);
        e->setToolTip(tr("Sizes in bytes or with a unit: 512k, 1.5 MiB, 2g (binary units)"));
    }
    row->addWidget(m_minSize);
    row->addWidget(new QLabel(QStringLiteral("–"), bar));
    row->addWidget(m_maxSize);
    m_search = new QLineEdit(bar);
    m_search->setPlaceholderText(tr("Frame, metadata or address"));
    m_search->setToolTip(tr("Show entries whose top frame, user metadata, compile context or hex address contains this text"));
    m_search->setMinimumWidth(120);
    m_search->setClearButtonEnabled(true);
    row->addWidget(m_search, 1);
    layout->addWidget(bar);

    m_model = new EventsModel(this);
    m_table = new QTableView(this);
    m_table->setModel(m_model);
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->setSelectionMode(QAbstractItemView::SingleSelection);
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->setAlternatingRowColors(true);
    m_table->setWordWrap(false);
    m_table->setShowGrid(false);
    m_table->verticalHeader()->hide();
    m_table->verticalHeader()->setSectionResizeMode(QHeaderView::Fixed);
    m_table->verticalHeader()->setDefaultSectionSize(m_table->fontMetrics().height() + 6);
    QHeaderView* header = m_table->horizontalHeader();
    header->setStretchLastSection(true);
    header->setHighlightSections(false);
    header->setDefaultAlignment(Qt::AlignLeft | Qt::AlignVCenter);
    const int digit = m_table->fontMetrics().horizontalAdvance(QLatin1Char('0'));
    m_table->setColumnWidth(EventsModel::IndexColumn, digit * 9);
    m_table->setColumnWidth(EventsModel::TimeColumn, digit * 12);
    m_table->setColumnWidth(EventsModel::ActionColumn, digit * 15);
    m_table->setColumnWidth(EventsModel::AddressColumn, digit * 17);
    m_table->setColumnWidth(EventsModel::SizeColumn, digit * 11);
    m_table->setColumnWidth(EventsModel::MetadataColumn, digit * 20);
    m_table->setColumnWidth(EventsModel::CompileContextColumn, digit * 24);
    layout->addWidget(m_table, 1);
    m_count = new QLabel(this);
    m_count->setContentsMargins(6, 2, 6, 2);
    m_count->setStyleSheet(QStringLiteral("color: #666;"));
    layout->addWidget(m_count);

    m_debounce = new QTimer(this);
    m_debounce->setSingleShot(true);
    m_debounce->setInterval(200);
    connect(m_debounce, &QTimer::timeout, this, &EventsView::applyFilter);
    connect(m_action, &QComboBox::currentIndexChanged, this, &EventsView::applyFilter);
    for (QLineEdit* e : {m_minSize, m_maxSize, m_search})
        connect(e, &QLineEdit::textChanged, m_debounce, qOverload<>(&QTimer::start));
    connect(m_table->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
            [this](const QModelIndex& current) { onCurrentRowChanged(current.row()); });
    connect(m_table->verticalScrollBar(), &QScrollBar::valueChanged, this, &EventsView::onScrolled);
    updateCount();
}

// The rows are a window of the shown entries (EventsModel): scrolled to either end of it, the
// window moves on by half its rows, the entry at the top staying at the top.
void EventsView::onScrolled(int value) {
    if (m_movingWindow || !m_doc) return;
    const QScrollBar* bar = m_table->verticalScrollBar();
    const int64_t half = m_model->windowRows() / 2;
    int64_t by = 0;
    if (value >= bar->maximum() && m_model->windowFirst() + m_model->rowCount() < m_model->shownCount())
        by = half;
    else if (value <= bar->minimum() && m_model->windowFirst() > 0)
        by = -half;
    if (by == 0) return;
    const int topRow = std::max(0, m_table->rowAt(0));
    const int64_t top = m_model->windowFirst() + topRow;  // among the shown entries
    m_movingWindow = true;
    {
        const QSignalBlocker block(m_table->selectionModel());
        m_model->moveWindow(by);
    }
    const int row = static_cast<int>(std::clamp<int64_t>(top - m_model->windowFirst(), 0, m_model->rowCount() - 1));
    m_table->scrollTo(m_model->index(row, 0), QAbstractItemView::PositionAtTop);
    selectCurrent(false);
    m_movingWindow = false;
    updateCount();
}

EventsView::~EventsView() = default;

void EventsView::setDocument(SnapshotDocument* doc) {
    if (m_doc == doc) return;
    if (m_doc) disconnect(m_doc, nullptr, this, nullptr);
    m_jobs.cancel();
    m_doc = doc;
    m_model->setDocument(doc);
    if (doc) {
        connect(doc, &SnapshotDocument::deviceChanged, this, &EventsView::applyFilter);
        connect(doc, &SnapshotDocument::deviceChanged, this, &EventsView::updateLabelColumns);
        connect(doc, &SnapshotDocument::selectionChanged, this, &EventsView::applyFilter);
        connect(doc, &SnapshotDocument::currentEventChanged, this, &EventsView::followCurrent);
    }
    updateLabelColumns();
    applyFilter();
}

// The user metadata and compile context columns show only where the trace has some (torch 2.10+
// with _set_memory_metadata, torch.compile); older snapshots keep the table as it was.
void EventsView::updateLabelColumns() {
    bool metadata = false, compile = false;
    if (m_doc) {
        const model::Snapshot& snap = m_doc->snapshot();
        const model::TraceColumns& t = m_doc->deviceData().trace;
        const model::StringId na = snap.strings.find("N/A");
        metadata = t.userMetadata.any([](model::StringId id) { return id != model::StringTable::kEmpty; });
        compile = t.compileContext.any([na](model::StringId id) { return id != model::StringTable::kEmpty && id != na; });
    }
    m_table->setColumnHidden(EventsModel::MetadataColumn, !metadata);
    m_table->setColumnHidden(EventsModel::CompileContextColumn, !compile);
}

EventFilter EventsView::currentFilter() const {
    EventFilter f;
    const int choice = std::clamp(m_action->currentIndex(), 0, static_cast<int>(std::size(kChoices)) - 1);
    f.actions = kChoices[choice].mask;
    if (auto v = parseBytes(m_minSize->text())) f.minSize = *v;
    if (auto v = parseBytes(m_maxSize->text())) f.maxSize = *v;
    f.text = m_search->text().trimmed().toStdString();
    if (m_doc && m_doc->selection()) {
        f.first = m_doc->selection()->first;
        f.last = m_doc->selection()->second;
    }
    return f;
}

void EventsView::setActionChoice(int index) {
    m_action->setCurrentIndex(index);
    applyFilter();
}

void EventsView::setSizeRange(const QString& min, const QString& max) {
    const QSignalBlocker b1(m_minSize), b2(m_maxSize);
    m_minSize->setText(min);
    m_maxSize->setText(max);
    applyFilter();
}

void EventsView::setSearchText(const QString& text) {
    const QSignalBlocker b(m_search);
    m_search->setText(text);
    applyFilter();
}

void EventsView::applyFilter() {
    m_debounce->stop();
    for (QLineEdit* e : {m_minSize, m_maxSize}) {
        const bool bad = !e->text().trimmed().isEmpty() && !parseBytes(e->text());
        e->setStyleSheet(bad ? QStringLiteral("QLineEdit { border: 1px solid #d62728; }") : QString());
    }
    m_jobs.cancel();
    m_error.clear();
    const EventFilter filter = currentFilter();
    if (!m_doc) {
        install({}, false, filter);
        return;
    }
    const int64_t n = m_doc->entryCount();
    if (filter.onlyRange()) {
        install({}, false, filter);
        return;
    }
    const int64_t rows = std::min(filter.last, n - 1) - std::max<int64_t>(filter.first, 0) + 1;
    if (rows <= m_backgroundRows) {
        install(filter.apply(m_doc->snapshot(), m_doc->deviceData().trace), true, filter);
        return;
    }
    // long trace: a job, which keeps the data alive and stops when superseded
    auto loaded = m_doc->sharedLoaded();
    const int device = m_doc->device();
    using Rows = std::vector<int64_t>;
    JobHandlers<Rows> h;
    h.done = [this, filter](quint64, Rows found) { install(std::move(found), true, filter); };
    h.failed = [this](quint64, const QString& message) { filterFailed(message); };
    m_jobs.start<Rows>(
        [loaded, device, filter](const JobControl& job) -> Rows {
            const model::DeviceData* dev = loaded->snapshot->device(device);
            // a device without data has no entries (as the document shows it: empty)
            if (!dev) return {};
            Rows found = filter.apply(*loaded->snapshot, dev->trace, job.cancelFlag());
            job.throwIfCancelled();  // a cancelled filter returns what it found so far
            return found;
        },
        std::move(h), JobText{{}, QStringLiteral("filter the entries")});
    updateCount();
}

void EventsView::install(std::vector<int64_t> rows, bool list, const EventFilter& filter) {
    const QSignalBlocker block(m_table->selectionModel());
    if (!m_doc) m_model->setRange(0, -1);
    else if (list) m_model->setEntries(std::move(rows));
    else m_model->setRange(filter.first, filter.last);
    updateCount();
    followCurrent();
    emit filterApplied();
}

void EventsView::filterFailed(const QString& message) {
    const QSignalBlocker block(m_table->selectionModel());
    m_model->setEntries({});
    m_error = message;
    updateCount();
    emit filterApplied();
}

void EventsView::updateCount() {
    if (!m_doc) {
        m_count->setText(tr("no snapshot"));
        return;
    }
    if (!m_error.isEmpty()) {
        m_count->setText(tr("The filter failed: %1").arg(m_error));
        return;
    }
    if (m_jobs.isRunning()) {
        m_count->setText(tr("filtering…"));
        return;
    }
    const QLocale loc = QLocale::system();
    const int64_t total = m_doc->entryCount();
    const int64_t shown = m_model->shownCount();
    QString text = shown == total ? tr("%1 entries").arg(loc.toString(static_cast<qlonglong>(total)))
                                  : tr("%1 of %2 entries").arg(loc.toString(static_cast<qlonglong>(shown)),
                                                               loc.toString(static_cast<qlonglong>(total)));
    if (m_doc->selection())
        text += tr(" in the selected range %1–%2")
                    .arg(loc.toString(static_cast<qlonglong>(m_doc->selection()->first)),
                         loc.toString(static_cast<qlonglong>(m_doc->selection()->second)));
    if (m_model->rowCount() < shown)
        text += tr(" (rows %1–%2 of them here; scrolling on brings the rest)")
                    .arg(loc.toString(static_cast<qlonglong>(m_model->windowFirst() + 1)),
                         loc.toString(static_cast<qlonglong>(m_model->windowFirst() + m_model->rowCount())));
    m_count->setText(text);
}

void EventsView::followCurrent() {
    if (!m_doc || m_syncing) return;
    if (m_model->rowOf(m_doc->currentEvent()) < 0) {
        m_movingWindow = true;  // a window moved to the current entry is not a scroll to either end
        {
            const QSignalBlocker block(m_table->selectionModel());
            if (m_model->showEntry(m_doc->currentEvent())) updateCount();
        }
        m_movingWindow = false;
    }
    selectCurrent(true);
}

void EventsView::selectCurrent(bool scroll) {
    const int row = m_doc ? m_model->rowOf(m_doc->currentEvent()) : -1;
    const QSignalBlocker block(m_table->selectionModel());
    if (row < 0) {
        m_table->selectionModel()->clearSelection();
        return;
    }
    const QModelIndex index = m_model->index(row, 0);
    m_table->selectionModel()->setCurrentIndex(index, QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
    if (scroll) {
        m_movingWindow = true;
        m_table->scrollTo(index, QAbstractItemView::EnsureVisible);
        m_movingWindow = false;
    }
    m_table->viewport()->update();
}

void EventsView::showEvent(QShowEvent* event) {
    QWidget::showEvent(event);
    // scrolling a hidden table does nothing: bring the current row into view once it shows
    QTimer::singleShot(0, this, [this] {
        if (m_table->currentIndex().isValid()) m_table->scrollTo(m_table->currentIndex(), QAbstractItemView::PositionAtCenter);
    });
}

void EventsView::onCurrentRowChanged(int row) {
    if (!m_doc || row < 0) return;
    const int64_t entry = m_model->entryAt(row);
    if (entry < 0) return;
    m_syncing = true;
    m_doc->setCurrentEvent(entry);
    const auto& trace = m_doc->deviceData().trace;
    const auto i = static_cast<size_t>(entry);
    if (isBlockEvent(trace.action[i]))
        m_doc->selectAllocation(trace.stack[i], tr("%1 %2 at 0x%3 (entry %4)")
                                                   .arg(QString::fromLatin1(model::actionName(trace.action[i])),
                                                        formatBytes(static_cast<double>(trace.size[i])),
                                                        QString::number(trace.addr[i], 16))
                                                   .arg(entry));
    m_syncing = false;
}

} // namespace memlens::views
