#include "iterdiff/IterationDiffView.h"

#include "common/ByteText.h"
#include "core/LoadedSnapshot.h"
#include "document/JobTracker.h"
#include "document/SnapshotDocument.h"

#include "memlens/model/Finding.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPointer>
#include <QPushButton>
#include <QSpinBox>
#include <QTableWidget>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

namespace memlens::views {

namespace {

enum Column { Bytes, Count, PerIteration, First, Where, ColumnCount };

// Sorts by the number in Qt::UserRole, not by its text.
class NumberItem : public QTableWidgetItem {
public:
    NumberItem(const QString& text, double value) : QTableWidgetItem(text) {
        setData(Qt::UserRole, value);
        setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
    }
    bool operator<(const QTableWidgetItem& other) const override {
        return data(Qt::UserRole).toDouble() < other.data(Qt::UserRole).toDouble();
    }
};

struct Prepared {
    model::IterationSplit split;
};

} // namespace

IterationDiffView::IterationDiffView(QWidget* parent) : QWidget(parent), m_jobs(std::make_unique<JobTracker>(this, JobPriority::Background)) {
    auto* v = new QVBoxLayout(this);
    v->setContentsMargins(4, 4, 4, 4);
    auto* row = new QHBoxLayout;
    row->addWidget(new QLabel(tr("Allocated in iterations"), this));
    m_from = new QSpinBox(this);
    m_from->setObjectName(QStringLiteral("fromIteration"));
    m_to = new QSpinBox(this);
    m_to->setObjectName(QStringLiteral("toIteration"));
    row->addWidget(m_from);
    row->addWidget(new QLabel(tr("to"), this));
    row->addWidget(m_to);
    row->addWidget(new QLabel(tr("alive at its end"), this));
    m_compare = new QPushButton(tr("Compare"), this);
    m_fromSelection = new QPushButton(tr("From the selection"), this);
    m_fromSelection->setToolTip(tr("The iterations that the timeline's selected range covers"));
    row->addWidget(m_compare);
    row->addWidget(m_fromSelection);
    row->addStretch(1);
    v->addLayout(row);
    // a second row, so that the dock stays narrow
    auto* files = new QHBoxLayout;
    files->addWidget(new QLabel(tr("Or this file's live memory against"), this));
    m_otherFiles = new QComboBox(this);
    m_otherFiles->setObjectName(QStringLiteral("otherFiles"));
    m_otherFiles->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    m_otherFiles->setMinimumContentsLength(16);
    files->addWidget(m_otherFiles);
    m_compareFiles = new QPushButton(tr("Compare files"), this);
    files->addWidget(m_compareFiles);
    files->addStretch(1);
    v->addLayout(files);
    m_status = new QLabel(tr("Open a snapshot with iterations."), this);
    m_status->setWordWrap(true);
    v->addWidget(m_status);
    m_table = new QTableWidget(0, ColumnCount, this);
    m_table->setObjectName(QStringLiteral("iterationDiffTable"));
    m_table->setHorizontalHeaderLabels({tr("Bytes"), tr("Count"), tr("Per iteration"), tr("Since"), tr("Allocated at")});
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->setSelectionMode(QAbstractItemView::SingleSelection);
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->verticalHeader()->hide();
    m_table->horizontalHeader()->setStretchLastSection(true);
    v->addWidget(m_table, 1);
    connect(m_compare, &QPushButton::clicked, this, [this] { compare(m_from->value(), m_to->value()); });
    connect(m_fromSelection, &QPushButton::clicked, this, &IterationDiffView::compareSelection);
    connect(m_compareFiles, &QPushButton::clicked, this, [this] {
        const int i = m_otherFiles->currentIndex();
        if (i >= 0 && i < m_others.size()) compareWith(m_others[i].data());
    });
    connect(m_table, &QTableWidget::itemSelectionChanged, this, [this] {
        const auto rows = m_table->selectionModel()->selectedRows();
        if (!rows.isEmpty()) selectRow(rows.front().row());
    });
    setDocument(nullptr);
}

IterationDiffView::~IterationDiffView() = default;

void IterationDiffView::setDocument(SnapshotDocument* doc) {
    if (m_doc) disconnect(m_doc, nullptr, this, nullptr);
    m_doc = doc;
    m_split = {};
    m_result.reset();
    m_fileDiff.reset();
    m_table->setRowCount(0);
    m_compare->setEnabled(false);
    QList<SnapshotDocument*> others;
    for (const auto& d : m_others)
        if (d) others << d.data();
    setOtherDocuments(others);
    m_fromSelection->setEnabled(false);
    if (!doc) {
        m_jobs->cancel();
        m_status->setText(tr("Open a snapshot with iterations."));
        return;
    }
    connect(doc, &SnapshotDocument::deviceChanged, this, [this] { setDocument(m_doc); });
    start();
}

void IterationDiffView::start() {
    auto loaded = m_doc->sharedLoaded();
    const int device = m_doc->device();
    m_status->setText(tr("Finding the iterations\u2026"));
    JobHandlers<std::shared_ptr<const Prepared>> h;
    h.done = [this](quint64, std::shared_ptr<const Prepared> p) {
        m_split = p->split;
        if (m_split.iterations.empty()) {
            m_status->setText(tr("No iterations in this trace (no annotations, no repeating pattern): nothing to compare."));
            emit finished();
            return;
        }
        const int first = static_cast<int>(m_split.iterations.front().number);
        const int last = static_cast<int>(m_split.iterations.back().number);
        for (QSpinBox* b : {m_from, m_to}) b->setRange(first, last);
        m_compare->setEnabled(true);
        m_fromSelection->setEnabled(true);
        // the complete iterations, all of them
        const size_t complete = std::max<size_t>(1, m_split.complete());
        compare(first, m_split.iterations[complete - 1].number);
    };
    h.failed = [this](quint64, const QString& message) {
        m_status->setText(message);
        emit finished();
    };
    h.cancelled = [](quint64) {};
    m_jobs->start<std::shared_ptr<const Prepared>>(
        [loaded, device](const JobControl& control) {
            auto p = std::make_shared<Prepared>();
            p->split = model::splitIterations(*loaded->snapshot, device);
            control.throwIfCancelled();
            return std::shared_ptr<const Prepared>(std::move(p));
        },
        std::move(h), JobText{QString(), QStringLiteral("find the iterations")});
}

bool IterationDiffView::compare(int64_t from, int64_t to) {
    if (!m_doc || m_split.iterations.empty()) return false;
    auto indexOf = [&](int64_t number) -> int64_t {
        for (size_t k = 0; k < m_split.iterations.size(); ++k)
            if (m_split.iterations[k].number == number) return static_cast<int64_t>(k);
        return -1;
    };
    const int64_t i = indexOf(std::min(from, to)), j = indexOf(std::max(from, to));
    if (i < 0 || j < 0) return false;
    {
        const QSignalBlocker b1(m_from), b2(m_to);
        m_from->setValue(static_cast<int>(m_split.iterations[static_cast<size_t>(i)].number));
        m_to->setValue(static_cast<int>(m_split.iterations[static_cast<size_t>(j)].number));
    }
    auto loaded = m_doc->sharedLoaded();
    const int device = m_doc->device();
    const model::IterationSplit split = m_split;
    m_status->setText(tr("Comparing\u2026"));
    JobHandlers<std::shared_ptr<const model::Survivors>> h;
    h.done = [this](quint64, std::shared_ptr<const model::Survivors> r) { showResult(std::move(r)); };
    h.failed = [this](quint64, const QString& message) {
        m_status->setText(message);
        emit finished();
    };
    h.cancelled = [](quint64) {};
    m_jobs->start<std::shared_ptr<const model::Survivors>>(
        [loaded, device, split, i, j](const JobControl&) {
            const model::TraceColumns& t = loaded->snapshot->device(device)->trace;
            return std::make_shared<const model::Survivors>(model::survivorsOf(t, split.iterations, static_cast<size_t>(i),
                                                                                static_cast<size_t>(j),
                                                                                split.iterations[static_cast<size_t>(j)].lastEntry));
        },
        std::move(h), JobText{QString(), QStringLiteral("compare the iterations")});
    return true;
}

void IterationDiffView::setOtherDocuments(QList<SnapshotDocument*> others) {
    m_others.clear();
    m_otherFiles->clear();
    for (SnapshotDocument* d : others)
        if (d && d != m_doc) {
            m_others << d;
            m_otherFiles->addItem(d->fileName());
        }
    m_otherFiles->setEnabled(!m_others.isEmpty() && m_doc);
    m_compareFiles->setEnabled(!m_others.isEmpty() && m_doc);
}

bool IterationDiffView::compareWith(SnapshotDocument* other) {
    if (!m_doc || !other || other == m_doc) return false;
    const int device = m_doc->device();
    auto a = m_doc->sharedLoaded(), b = other->sharedLoaded();
    // the documents' own final states of the device, or histories (made when they loaded)
    auto finalA = m_doc->finalStateOf(device), finalB = other->finalStateOf(device);
    if (!a->snapshot->device(device) || !b->snapshot->device(device)) {
        m_status->setText(tr("%1 has no device %2 to compare with.").arg(other->fileName()).arg(device));
        return false;
    }
    m_status->setText(tr("Comparing the files\u2026"));
    QPointer<SnapshotDocument> target(other);
    JobHandlers<std::shared_ptr<const std::vector<model::StackDelta>>> h;
    h.done = [this, target](quint64, std::shared_ptr<const std::vector<model::StackDelta>> d) { showFileDiff(std::move(d), target.data()); };
    h.failed = [this](quint64, const QString& message) {
        m_status->setText(message);
        emit finished();
    };
    h.cancelled = [](quint64) {};
    m_jobs->start<std::shared_ptr<const std::vector<model::StackDelta>>>(
        [a, b, finalA, finalB, device](const JobControl&) {
            auto finalState = [device](const LoadedSnapshot& l, const std::shared_ptr<const model::DeviceState>& made) {
                if (made) return *made;
                if (auto h = l.histories.find(device); h != l.histories.end()) return h->second->stateAfter(h->second->entries() - 1);
                return model::finalDeviceState(*l.snapshot, device);
            };
            return std::make_shared<const std::vector<model::StackDelta>>(
                model::diffLiveByStack(*a->snapshot, finalState(*a, finalA), *b->snapshot, finalState(*b, finalB)));
        },
        std::move(h), JobText{QString(), QStringLiteral("compare the files")});
    return true;
}

void IterationDiffView::showFileDiff(std::shared_ptr<const std::vector<model::StackDelta>> deltas, SnapshotDocument* other) {
    m_fileDiff = std::move(deltas);
    m_result.reset();
    int64_t a = 0, b = 0;
    int changed = 0;
    for (const model::StackDelta& d : *m_fileDiff) {
        a += static_cast<int64_t>(d.bytesA), b += static_cast<int64_t>(d.bytesB);
        changed += d.change != model::StackDelta::Change::Same;
    }
    m_status->setText(tr("%1 against %2: live %3 \u2192 %4 (%5); %6 stacks changed.")
                          .arg(other ? other->fileName() : tr("the other file"), m_doc->fileName(), formatBytes(static_cast<double>(a)),
                               formatBytes(static_cast<double>(b)), (b >= a ? QStringLiteral("+") : QString()) + formatBytes(static_cast<double>(b - a)))
                          .arg(changed));
    m_table->setSortingEnabled(false);
    m_table->setHorizontalHeaderLabels({tr("Change"), tr("Here"), tr("There"), tr("Difference"), tr("Allocated at")});
    m_table->setRowCount(changed);
    int r = 0;
    for (size_t i = 0; i < m_fileDiff->size(); ++i) {
        const model::StackDelta& d = (*m_fileDiff)[i];
        if (d.change == model::StackDelta::Change::Same) continue;
        auto* change = new QTableWidgetItem(QString::fromLatin1(model::stackChangeName(d.change)));
        change->setData(Qt::UserRole + 1, static_cast<int>(i));
        m_table->setItem(r, 0, change);
        m_table->setItem(r, 1, new NumberItem(formatBytes(static_cast<double>(d.bytesA)), static_cast<double>(d.bytesA)));
        m_table->setItem(r, 2, new NumberItem(formatBytes(static_cast<double>(d.bytesB)), static_cast<double>(d.bytesB)));
        m_table->setItem(r, 3, new NumberItem((d.delta() >= 0 ? QStringLiteral("+") : QString()) + formatBytes(static_cast<double>(d.delta())),
                                              static_cast<double>(d.delta())));
        const std::string where = d.inA ? model::whereOf(m_doc->snapshot(), d.stackA) : (other ? model::whereOf(other->snapshot(), d.stackB) : "");
        m_table->setItem(r, 4, new QTableWidgetItem(where.empty() ? tr("(no stack)") : QString::fromStdString(where)));
        ++r;
    }
    m_table->setSortingEnabled(true);
    m_table->resizeColumnsToContents();
    emit finished();
}

bool IterationDiffView::compareSelection() {
    if (!m_doc || m_split.iterations.empty()) return false;
    const auto sel = m_doc->selection();
    if (!sel) return false;
    int64_t first = -1, last = -1;
    for (const model::Iteration& it : m_split.iterations) {
        if (it.lastEntry < sel->first || it.firstEntry > sel->second) continue;
        if (first < 0) first = it.number;
        last = it.number;
    }
    return first >= 0 && compare(first, last);
}

bool IterationDiffView::isBusy() const { return m_jobs->isRunning(); }

int IterationDiffView::rowCount() const { return m_table->rowCount(); }

QString IterationDiffView::statusText() const { return m_status->text(); }

void IterationDiffView::showResult(std::shared_ptr<const model::Survivors> result) {
    m_result = std::move(result);
    const model::Survivors& s = *m_result;
    const auto& its = m_split.iterations;
    const bool cut = m_split.lastIncomplete && s.to + 1 == its.size();
    m_status->setText(tr("Iterations %1 to %2 (%3) left %4 in %5 allocations alive at the end of iteration %2%6; %7 stacks.")
                          .arg(its[s.from].number)
                          .arg(its[s.to].number)
                          .arg(QString::fromLatin1(model::iterationSourceName(m_split.source)))
                          .arg(formatBytes(static_cast<double>(s.bytes)))
                          .arg(s.count)
                          .arg(cut ? tr(" (which the trace cuts off: work in progress)") : QString())
                          .arg(s.groups.size()));
    m_fileDiff.reset();
    m_table->setSortingEnabled(false);
    m_table->setHorizontalHeaderLabels({tr("Bytes"), tr("Count"), tr("Per iteration"), tr("Since"), tr("Allocated at")});
    m_table->setRowCount(static_cast<int>(s.groups.size()));
    const model::Snapshot& snap = m_doc->snapshot();
    for (int r = 0; r < static_cast<int>(s.groups.size()); ++r) {
        const model::SurvivorGroup& g = s.groups[static_cast<size_t>(r)];
        auto* bytes = new NumberItem(formatBytes(static_cast<double>(g.bytes)), static_cast<double>(g.bytes));
        bytes->setData(Qt::UserRole + 1, r);  // the group, whatever the sort
        m_table->setItem(r, Bytes, bytes);
        m_table->setItem(r, Count, new NumberItem(QString::number(g.count), static_cast<double>(g.count)));
        m_table->setItem(r, PerIteration, new NumberItem(formatBytes(g.bytesPerIteration()), g.bytesPerIteration()));
        m_table->setItem(r, First, new NumberItem(QString::number(g.firstIteration), static_cast<double>(g.firstIteration)));
        const std::string where = model::whereOf(snap, g.stack);
        m_table->setItem(r, Where, new QTableWidgetItem(where.empty() ? tr("(no stack)") : QString::fromStdString(where)));
    }
    m_table->setSortingEnabled(true);
    m_table->sortByColumn(Bytes, Qt::DescendingOrder);
    m_table->resizeColumnsToContents();
    emit finished();
}

void IterationDiffView::selectRow(int row) {
    if (!m_doc || row < 0 || row >= m_table->rowCount()) return;
    if (m_fileDiff) {  // a stack of this file (one that only the other has cannot be shown here)
        const auto& d = (*m_fileDiff)[static_cast<size_t>(m_table->item(row, 0)->data(Qt::UserRole + 1).toInt())];
        if (d.inA) m_doc->selectAllocation(d.stackA, tr("%1 against the other file").arg(QString::fromLatin1(model::stackChangeName(d.change))));
        return;
    }
    if (!m_result) return;
    const int group = m_table->item(row, Bytes)->data(Qt::UserRole + 1).toInt();
    const model::SurvivorGroup& g = m_result->groups[static_cast<size_t>(group)];
    // its surviving blocks, marked in the block map
    const auto& its = m_split.iterations;
    const model::TraceColumns& t = m_doc->deviceData().trace;
    SnapshotDocument::MarkedAddresses marked;
    marked.holder = tr("iterations %1-%2").arg(its[m_result->from].number).arg(its[m_result->to].number);
    for (const int32_t alloc : g.allocs) marked.addresses.emplace_back(m_doc->device(), t.addr[static_cast<size_t>(alloc)]);
    m_doc->setMarkedAddresses(std::move(marked));
    m_doc->setCurrentEvent(m_result->aliveAfter);
    m_doc->selectAllocation(g.stack, tr("survivors of iterations %1-%2").arg(its[m_result->from].number).arg(its[m_result->to].number));
}

} // namespace memlens::views
