#include "whatif/WhatIfView.h"

#include "common/ByteText.h"
#include "document/JobTracker.h"
#include "document/SnapshotDocument.h"
#include "memlens/model/SimulatedState.h"
#include "memlens/model/WhatIfVerdict.h"

#include <QCheckBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QRegularExpression>
#include <QScrollArea>
#include <QTableWidget>
#include <QVBoxLayout>

#include <stdexcept>

namespace memlens::views {

namespace {

QString qs(const std::string& s) { return QString::fromStdString(s); }

// "a:1,b:[1:2,3:4]" -> {"a:1", "b:[1:2,3:4]"}: commas inside brackets belong to the value.
QStringList splitAllocConf(const QString& text) {
    QStringList out;
    QString cur;
    int depth = 0;
    for (QChar c : text) {
        if (c == QLatin1Char('[')) ++depth;
        if (c == QLatin1Char(']')) depth = std::max(0, depth - 1);
        if (c == QLatin1Char(',') && depth == 0) {
            if (!cur.trimmed().isEmpty()) out << cur.trimmed();
            cur.clear();
        } else {
            cur += c;
        }
    }
    if (!cur.trimmed().isEmpty()) out << cur.trimmed();
    return out;
}

QString oomText(const std::optional<model::OomOutcome>& o) {
    if (!o) return QObject::tr("none");
    return QObject::tr("entry #%1: %2 asked, %3 free, largest free block %4")
        .arg(o->entry)
        .arg(formatBytes(o->sizeAsked), formatBytes(o->totalFree), formatBytes(o->largestFreeBlock));
}

QString percentText(double fraction) { return QString::number(fraction * 100.0, 'f', 0) + QLatin1Char('%'); }

QLineEdit* lineEdit(QWidget* parent, const QString& placeholder) {
    auto* e = new QLineEdit(parent);
    e->setPlaceholderText(placeholder);
    e->setClearButtonEnabled(true);
    return e;
}

} // namespace

WhatIfView::WhatIfView(QWidget* parent)
    : QWidget(parent), m_jobs(std::make_unique<JobTracker>(this, JobPriority::Background)), m_stateJobs(std::make_unique<JobTracker>(this)) {
    auto* outer = new QVBoxLayout(this);
    outer->setContentsMargins(0, 0, 0, 0);
    auto* scroll = new QScrollArea(this);
    scroll->setWidgetResizable(true);
    scroll->setFrameShape(QFrame::NoFrame);
    outer->addWidget(scroll);
    auto* page = new QWidget;
    auto* v = new QVBoxLayout(page);
    v->setContentsMargins(8, 8, 8, 8);

    m_recordedSettings = new QLabel(page);
    m_recordedSettings->setWordWrap(true);
    m_recordedSettings->setTextFormat(Qt::RichText);
    v->addWidget(m_recordedSettings);

    auto* buttons = new QHBoxLayout;
    m_run = new QPushButton(tr("Run"), page);
    m_run->setDefault(true);
    m_cancel = new QPushButton(tr("Cancel"), page);
    m_cancel->setEnabled(false);
    m_status = new QLabel(page);
    buttons->addWidget(m_run);
    buttons->addWidget(m_cancel);
    buttons->addWidget(m_status, 1);
    v->addLayout(buttons);

    m_error = new QLabel(page);
    m_error->setWordWrap(true);
    m_error->setStyleSheet(QStringLiteral("color: #b00020;"));
    m_error->hide();
    v->addWidget(m_error);

    m_verdict = new QLabel(page);
    m_verdict->setWordWrap(true);
    m_verdict->setTextFormat(Qt::PlainText);
    QFont f = m_verdict->font();
    f.setBold(true);
    m_verdict->setFont(f);
    v->addWidget(m_verdict);

    m_table = new QTableWidget(0, 2, page);
    m_table->setHorizontalHeaderLabels({tr("Recording"), tr("Simulation")});
    m_table->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->setMinimumHeight(120);
    v->addWidget(m_table);

    m_onTimeline = new QCheckBox(tr("Draw the simulated reserved and live bytes on the timeline"), page);
    m_onTimeline->setChecked(true);
    m_inBlockMap = new QCheckBox(tr("Show the simulated state after the current entry in the block map"), page);
    v->addWidget(m_onTimeline);
    v->addWidget(m_inBlockMap);
    auto* allocator = new QGroupBox(tr("Allocator settings (PYTORCH_CUDA_ALLOC_CONF)"), page);
    auto* af = new QFormLayout(allocator);
    m_expandable = new QCheckBox(tr("expandable_segments"), allocator);
    af->addRow(m_expandable);
    m_maxSplit = lineEdit(allocator, tr("as recorded (MiB)"));
    af->addRow(tr("max_split_size_mb"), m_maxSplit);
    m_gcThreshold = lineEdit(allocator, tr("as recorded (0 to 1)"));
    af->addRow(tr("garbage_collection_threshold"), m_gcThreshold);
    m_roundup = lineEdit(allocator, tr("as recorded: 4, or [256:1,512:2,>:4]"));
    af->addRow(tr("roundup_power2_divisions"), m_roundup);
    m_other = lineEdit(allocator, tr("other keys: key:value,key:value"));
    af->addRow(tr("other"), m_other);
    v->addWidget(allocator);

    auto* device = new QGroupBox(tr("Device"), page);
    auto* df = new QFormLayout(device);
    m_capacity = lineEdit(device, tr("from the recording's out-of-memory, else unlimited"));
    df->addRow(tr("capacity"), m_capacity);
    m_fraction = lineEdit(device, tr("per_process_memory_fraction, 0 to 1"));
    df->addRow(tr("fraction"), m_fraction);
    v->addWidget(device);

    auto* workload = new QGroupBox(tr("Workload"), page);
    auto* wf = new QFormLayout(workload);
    m_freeStacks = lineEdit(workload, tr("a frame (function or file), comma-separated"));
    m_freeStacks->setToolTip(tr("Allocations whose stack has such a frame are freed at the end of the iteration that "
                                "made them, when they outlive it: the leak fixed."));
    wf->addRow(tr("free survivors of"), m_freeStacks);
    m_dropAbove = lineEdit(workload, tr("e.g. 1 GiB"));
    wf->addRow(tr("drop allocations above"), m_dropAbove);
    m_scale = new QDoubleSpinBox(workload);
    m_scale->setRange(0.05, 8.0);
    m_scale->setSingleStep(0.25);
    m_scale->setValue(1.0);
    m_scale->setToolTip(tr("Allocations made under forward or backward scaled by this factor (a smaller or larger "
                           "batch): an estimate."));
    wf->addRow(tr("scale forward/backward"), m_scale);
    v->addWidget(workload);

    v->addStretch(1);
    scroll->setWidget(page);

    connect(m_run, &QPushButton::clicked, this, [this] { run(); });
    connect(m_cancel, &QPushButton::clicked, this, &WhatIfView::cancel);
    connect(m_onTimeline, &QCheckBox::toggled, this, [this] { publishSeries(); });
    connect(m_inBlockMap, &QCheckBox::toggled, this, [this] { requestState(); });
    setDocument(nullptr);
}

WhatIfView::~WhatIfView() = default;

void WhatIfView::setDocument(SnapshotDocument* doc) {
    if (m_doc) disconnect(m_doc, nullptr, this, nullptr);
    m_doc = doc;
    if (doc) {
        connect(doc, &SnapshotDocument::deviceChanged, this, [this] { resetForDocument(); });
        connect(doc, &SnapshotDocument::currentEventChanged, this, [this] { requestState(); });
    }
    resetForDocument();
}

void WhatIfView::resetForDocument() {
    m_jobs->cancel();
    m_stateJobs->cancel();
    m_result.reset();
    m_verdict->clear();
    m_error->hide();
    m_table->setRowCount(0);
    setBusy(false);
    m_run->setEnabled(m_doc != nullptr && m_doc->device() != model::kHostDevice);
    if (m_doc && m_doc->device() == model::kHostDevice) {
        m_recordedSettings->setText(tr("Pinned host memory: what-if models PyTorch's CUDA caching allocator, not the "
                                       "pinned host allocator. Pick a GPU in the device combo."));
    } else if (m_doc) {
        const model::SimulatorSettings recorded = model::SimulatorSettings::fromSnapshot(*m_doc->loaded().snapshot);
        m_expandable->setChecked(recorded.expandableSegments);
        const std::string d = recorded.describe();
        m_recordedSettings->setText(tr("Device %1, %2 trace entries. Recorded with %3.")
                                        .arg(m_doc->device())
                                        .arg(m_doc->entryCount())
                                        .arg(d.empty() ? tr("the default settings") : qs(d).toHtmlEscaped()));
    } else {
        m_recordedSettings->setText(tr("No snapshot open. What-if replays a trace through a model of PyTorch's "
                                       "caching allocator with other settings."));
    }
    emit simulatedSeriesChanged({});
    emit simulatedStateChanged(nullptr, {});
}

void WhatIfView::setExpandableSegments(bool on) { m_expandable->setChecked(on); }
void WhatIfView::setOtherSettings(const QString& allocConf) { m_other->setText(allocConf); }
void WhatIfView::setCapacityText(const QString& text) { m_capacity->setText(text); }
void WhatIfView::setFractionText(const QString& text) { m_fraction->setText(text); }
void WhatIfView::setFreeStacksText(const QString& text) { m_freeStacks->setText(text); }
void WhatIfView::setDropAboveText(const QString& text) { m_dropAbove->setText(text); }
void WhatIfView::setScale(double factor) { m_scale->setValue(factor); }

void WhatIfView::setSettingText(const QString& key, const QString& value) {
    if (key == QLatin1String("max_split_size_mb")) m_maxSplit->setText(value);
    else if (key == QLatin1String("garbage_collection_threshold")) m_gcThreshold->setText(value);
    else if (key == QLatin1String("roundup_power2_divisions")) m_roundup->setText(value);
    else if (key == QLatin1String("expandable_segments")) m_expandable->setChecked(value.compare(QLatin1String("true"), Qt::CaseInsensitive) == 0);
    else m_other->setText((m_other->text().isEmpty() ? QString() : m_other->text() + QLatin1Char(',')) + key + QLatin1Char(':') + value);
}

std::optional<WhatIfView::Request> WhatIfView::readForm(QString* error) const {
    Request r;
    const model::SimulatorSettings recorded = model::SimulatorSettings::fromSnapshot(*m_doc->loaded().snapshot);
    r.settings = recorded;
    QStringList asked;
    auto set = [&](const QString& key, const QString& value) {
        r.settings.set(key.toStdString(), value.toStdString());  // throws std::invalid_argument
        asked << key + QLatin1Char(':') + value;
    };
    try {
        if (m_expandable->isChecked() != recorded.expandableSegments)
            set(QStringLiteral("expandable_segments"), m_expandable->isChecked() ? QStringLiteral("True") : QStringLiteral("False"));
        const std::pair<QLineEdit*, const char*> keyed[] = {{m_maxSplit, "max_split_size_mb"},
                                                           {m_gcThreshold, "garbage_collection_threshold"},
                                                           {m_roundup, "roundup_power2_divisions"}};
        for (const auto& [edit, key] : keyed)
            if (!edit->text().trimmed().isEmpty()) set(QLatin1String(key), edit->text().trimmed());
        for (const QString& kv : splitAllocConf(m_other->text())) {
            const qsizetype at = kv.indexOf(QRegularExpression(QStringLiteral("[:=]")));
            if (at <= 0) throw std::invalid_argument("'" + kv.toStdString() + "' is not key:value");
            set(kv.left(at).trimmed(), kv.mid(at + 1).trimmed());
        }
        if (!m_capacity->text().trimmed().isEmpty()) {
            const auto bytes = parseBytes(m_capacity->text());
            if (!bytes || *bytes == 0) throw std::invalid_argument("capacity '" + m_capacity->text().toStdString() + "' is not a size");
            r.settings.set("capacity", std::to_string(*bytes));
            asked << tr("capacity %1").arg(formatBytes(static_cast<double>(*bytes)));
        }
        if (!m_fraction->text().trimmed().isEmpty()) {
            r.settings.set("fraction", m_fraction->text().trimmed().toStdString());
            asked << tr("memory fraction %1").arg(m_fraction->text().trimmed());
        }
        for (const QString& frame : m_freeStacks->text().split(QLatin1Char(','), Qt::SkipEmptyParts))
            if (!frame.trimmed().isEmpty()) r.edits.freeStacks.push_back(frame.trimmed().toStdString());
        if (!r.edits.freeStacks.empty())
            asked << tr("the survivors of '%1' freed at the end of their iteration")
                         .arg(m_freeStacks->text().split(QLatin1Char(','), Qt::SkipEmptyParts).join(QStringLiteral("', '")).trimmed());
        if (!m_dropAbove->text().trimmed().isEmpty()) {
            const auto bytes = parseBytes(m_dropAbove->text());
            if (!bytes) throw std::invalid_argument("'" + m_dropAbove->text().toStdString() + "' is not a size");
            r.edits.dropAbove = *bytes;
            asked << tr("allocations above %1 dropped").arg(formatBytes(static_cast<double>(*bytes)));
        }
        if (m_scale->value() != 1.0) {
            r.edits.scale = m_scale->value();
            asked << tr("forward/backward allocations scaled by %1").arg(m_scale->value());
        }
    } catch (const std::exception& e) {
        *error = qs(e.what());
        return std::nullopt;
    }
    r.asked = asked.join(QStringLiteral(", "));
    return r;
}

bool WhatIfView::run() {
    if (!m_doc || m_doc->device() == model::kHostDevice) return false;
    QString error;
    auto request = readForm(&error);
    if (!request) {
        showError(error);
        return false;
    }
    return start(*request);
}

bool WhatIfView::runFix(const model::FindingFix& fix) {
    if (!m_doc || m_doc->device() == model::kHostDevice) return false;
    if (!fix.possible) {
        showError(qs(fix.why));
        return false;
    }
    Request r;
    r.settings = model::SimulatorSettings::fromSnapshot(*m_doc->loaded().snapshot);
    try {
        for (const auto& [key, value] : fix.settings) r.settings.set(key, value);
    } catch (const std::exception& e) {
        showError(qs(e.what()));
        return false;
    }
    r.edits = fix.edits;
    r.asked = qs(fix.asked);
    return start(r);
}

bool WhatIfView::start(const Request& request) {
    m_error->hide();
    auto snapshot = m_doc->loaded().snapshot;
    const int device = m_doc->device();
    const Request req = request;
    JobHandlers<std::shared_ptr<const model::WhatIfResult>> h;
    h.done = [this, req](quint64, std::shared_ptr<const model::WhatIfResult> result) {
        setBusy(false);
        m_resultEdits = req.edits;
        showResult(std::move(result), req.asked);
        emit finished();
    };
    h.failed = [this](quint64, const QString& message) {
        setBusy(false);
        showError(message);
        emit finished();
    };
    h.cancelled = [this](quint64) {
        setBusy(false, tr("Cancelled."));
        emit finished();
    };
    setBusy(true, tr("Simulating\u2026"));
    m_jobs->start<std::shared_ptr<const model::WhatIfResult>>(
        [snapshot, device, req](const JobControl&) {
            // dense enough to draw: one point per few pixels of a wide timeline
            return std::make_shared<const model::WhatIfResult>(model::whatIf(*snapshot, device, req.settings, req.edits, 4000));
        },
        std::move(h), JobText{QStringLiteral("what-if"), QStringLiteral("simulate this trace")});
    return true;
}

void WhatIfView::cancel() { m_jobs->cancel(); }

bool WhatIfView::isBusy() const { return m_jobs->isRunning() || m_stateJobs->isRunning(); }

void WhatIfView::setBusy(bool busy, const QString& status) {
    m_cancel->setEnabled(busy);
    m_run->setEnabled(m_doc != nullptr && m_doc->device() != model::kHostDevice);
    m_status->setText(status);
}

void WhatIfView::showError(const QString& message) {
    m_error->setText(message);
    m_error->show();
}

void WhatIfView::showResult(std::shared_ptr<const model::WhatIfResult> result, const QString& asked) {
    m_result = std::move(result);
    m_resultAsked = asked;
    const model::WhatIfResult& r = *m_result;
    m_verdict->setText(qs(model::whatIfVerdict(r, asked.toStdString())));
    struct Row {
        QString name, recording, simulation;
    };
    const model::Outcome& rec = r.recording;
    const model::Outcome& sim = r.simulation;
    const QString capacity = r.settings.capacity ? formatBytes(static_cast<double>(r.settings.capacity)) : tr("unlimited");
    const std::vector<Row> rows = {
        {tr("Peak reserved"), formatBytes(static_cast<double>(rec.peakReserved)), formatBytes(static_cast<double>(sim.peakReserved))},
        {tr("Peak allocated (blocks)"), formatBytes(static_cast<double>(rec.peakAllocated)),
         formatBytes(static_cast<double>(sim.peakAllocated))},
        {tr("Peak live (bytes asked)"), formatBytes(static_cast<double>(rec.peakLive)), formatBytes(static_cast<double>(sim.peakLive))},
        {tr("Free at the peak"), formatBytes(static_cast<double>(rec.freeAtPeak)), formatBytes(static_cast<double>(sim.freeAtPeak))},
        {tr("Largest free block at the peak"), formatBytes(static_cast<double>(rec.largestFreeAtPeak)),
         formatBytes(static_cast<double>(sim.largestFreeAtPeak))},
        {tr("Fragmentation at the peak"), percentText(rec.fragmentationAtPeak), percentText(sim.fragmentationAtPeak)},
        {tr("First out-of-memory"), oomText(rec.firstOom), oomText(sim.firstOom)},
        {tr("Out-of-memory errors"), QString::number(rec.ooms), QString::number(sim.ooms)},
        {tr("Device capacity"), tr("as recorded"), capacity + QStringLiteral(" (") + qs(r.capacitySource) + QLatin1Char(')')},
    };
    m_table->setRowCount(static_cast<int>(rows.size()));
    QStringList names;
    for (size_t i = 0; i < rows.size(); ++i) {
        names << rows[i].name;
        m_table->setItem(static_cast<int>(i), 0, new QTableWidgetItem(rows[i].recording));
        m_table->setItem(static_cast<int>(i), 1, new QTableWidgetItem(rows[i].simulation));
    }
    m_table->setVerticalHeaderLabels(names);
    m_table->resizeRowsToContents();
    m_status->setText(r.estimated || r.edits.estimated ? tr("Done (estimated).") : tr("Done."));
    publishSeries();
    requestState();
}

void WhatIfView::publishSeries() {
    if (m_result && m_onTimeline->isChecked()) emit simulatedSeriesChanged(m_result->simulation.series);
    else emit simulatedSeriesChanged({});
}

void WhatIfView::requestState() {
    if (!m_doc || !m_result || !m_inBlockMap->isChecked()) {
        m_stateJobs->cancel();
        emit simulatedStateChanged(nullptr, {});
        return;
    }
    auto snapshot = m_doc->loaded().snapshot;
    const int device = m_doc->device();
    const int64_t entry = m_doc->currentEvent();
    const model::SimulatorSettings settings = m_result->settings;
    const model::WorkloadEdits edits = m_resultEdits;
    const QString label = m_resultAsked.isEmpty() ? tr("replayed unchanged") : m_resultAsked;
    JobHandlers<std::shared_ptr<const model::DeviceState>> h;
    h.done = [this, label](quint64, std::shared_ptr<const model::DeviceState> state) {
        emit simulatedStateChanged(std::move(state), label);
    };
    h.failed = [this](quint64, const QString& message) {
        showError(message);
        emit simulatedStateChanged(nullptr, {});
    };
    m_stateJobs->start<std::shared_ptr<const model::DeviceState>>(
        [snapshot, device, settings, edits, entry](const JobControl&) {
            return std::make_shared<const model::DeviceState>(model::simulatedStateAfter(*snapshot, device, settings, edits, entry));
        },
        std::move(h), JobText{QStringLiteral("what-if"), QStringLiteral("simulate this trace")});
}

QString WhatIfView::verdictText() const { return m_verdict->text(); }
QString WhatIfView::errorText() const { return m_error->isHidden() ? QString() : m_error->text(); }

QStringList WhatIfView::rowTexts() const {
    QStringList out;
    for (int r = 0; r < m_table->rowCount(); ++r)
        out << m_table->verticalHeaderItem(r)->text() + QLatin1Char('|') + m_table->item(r, 0)->text() + QLatin1Char('|') +
                   m_table->item(r, 1)->text();
    return out;
}

bool WhatIfView::drawsOnTimeline() const { return m_onTimeline->isChecked(); }
void WhatIfView::setDrawOnTimeline(bool on) { m_onTimeline->setChecked(on); }
bool WhatIfView::showsInBlockMap() const { return m_inBlockMap->isChecked(); }
void WhatIfView::setShowInBlockMap(bool on) { m_inBlockMap->setChecked(on); }

} // namespace memlens::views
