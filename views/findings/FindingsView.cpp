#include "findings/FindingsView.h"

#include "common/ByteText.h"
#include "document/JobTracker.h"
#include "document/SnapshotDocument.h"

#include "memlens/model/SessionDoctor.h"
#include "memlens/model/SessionFile.h"
#include "memlens/model/SnapshotDoctor.h"

#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QSplitter>
#include <QTableWidget>
#include <QTextBrowser>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

namespace memlens::views {

namespace {

QString qs(const std::string& s) { return QString::fromStdString(s); }

enum Column { Severity, Rule, Bytes, PerIteration, Since, Title, ColumnCount };

QColor severityColour(model::Severity s) {
    switch (s) {
    case model::Severity::Error: return QColor(0xc6, 0x28, 0x28);
    case model::Severity::Warning: return QColor(0xe0, 0x8e, 0x00);
    case model::Severity::Info: return QColor(0x55, 0x77, 0x99);
    }
    return {};
}

// `code` in findings' text as code, the rest escaped.
QString richText(const std::string& text) {
    const QString t = qs(text).toHtmlEscaped();
    QString out;
    bool code = false;
    for (QChar c : t) {
        if (c == QLatin1Char('`')) {
            out += code ? QStringLiteral("</code>") : QStringLiteral("<code>");
            code = !code;
        } else {
            out += c;
        }
    }
    if (code) out += QStringLiteral("</code>");
    return out;
}

} // namespace

FindingsView::FindingsView(QWidget* parent) : QWidget(parent), m_jobs(std::make_unique<JobTracker>(this, JobPriority::Background)) {
    auto* v = new QVBoxLayout(this);
    v->setContentsMargins(4, 4, 4, 4);
    m_status = new QLabel(tr("Open a snapshot or a session: the doctor says what its memory shows."), this);
    m_status->setWordWrap(true);
    v->addWidget(m_status);
    m_summary = new QLabel(this);
    m_summary->setWordWrap(true);
    m_summary->setTextInteractionFlags(Qt::TextSelectableByMouse);
    v->addWidget(m_summary);
    auto* split = new QSplitter(Qt::Vertical, this);
    m_table = new QTableWidget(0, ColumnCount, split);
    m_table->setObjectName(QStringLiteral("findingsTable"));
    m_table->setHorizontalHeaderLabels({tr("Severity"), tr("Rule"), tr("Bytes"), tr("Per iteration"), tr("Since"), tr("Finding")});
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->setSelectionMode(QAbstractItemView::SingleSelection);
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->verticalHeader()->hide();
    m_table->horizontalHeader()->setStretchLastSection(true);
    m_table->setWordWrap(false);
    m_detail = new QTextBrowser(split);
    m_detail->setObjectName(QStringLiteral("findingDetail"));
    m_detail->setOpenLinks(false);
    split->setStretchFactor(0, 2);
    split->setStretchFactor(1, 3);
    v->addWidget(split, 1);
    m_whatIf = new QPushButton(tr("What if this were fixed?"), this);
    m_whatIf->setObjectName(QStringLiteral("whatIfFixed"));
    m_whatIf->setToolTip(tr("Replay the trace through the allocator simulator with this finding fixed (What-if)"));
    m_whatIf->setEnabled(false);
    connect(m_whatIf, &QPushButton::clicked, this, &FindingsView::requestFix);
    v->addWidget(m_whatIf, 0, Qt::AlignLeft);
    connect(m_table, &QTableWidget::itemSelectionChanged, this, [this] { selectFinding(selectedFinding()); });
}

FindingsView::~FindingsView() = default;

void FindingsView::setDocument(SnapshotDocument* doc, const QString& sessionPath) {
    if (m_doc) disconnect(m_doc, nullptr, this, nullptr);
    m_doc = doc;
    m_sessionPath = sessionPath;
    m_report.reset();
    m_table->setRowCount(0);
    m_detail->clear();
    m_summary->clear();
    m_whatIf->setEnabled(false);
    if (!doc) {
        m_jobs->cancel();
        m_status->setText(tr("Open a snapshot or a session: the doctor says what its memory shows."));
        emit reportChanged();
        return;
    }
    connect(doc, &SnapshotDocument::deviceChanged, this, [this] { start(); });
    connect(doc, &QObject::destroyed, this, [this] { setDocument(nullptr); });
    emit reportChanged();
    start();
}

void FindingsView::start() {
    if (!m_doc) return;
    if (m_doc->isRewinding()) {
        // the doctor reads the document's state histories: it starts once they are built
        m_jobs->cancel();
        m_status->setText(tr("Examining\u2026"));
        connect(m_doc, &SnapshotDocument::historiesReady, this, &FindingsView::start, Qt::UniqueConnection);
        return;
    }
    auto loaded = m_doc->sharedLoaded();
    auto histories = m_doc->histories();
    const int gpu = m_doc->device() == model::kHostDevice ? model::doctorDevice(m_doc->snapshot()) : m_doc->device();
    const std::shared_ptr<const model::DeviceState> finalState = m_doc->finalStateOf(gpu);
    const std::string session = m_sessionPath.toStdString();
    m_status->setText(tr("Examining\u2026"));
    JobHandlers<std::shared_ptr<const model::DoctorReport>> h;
    h.done = [this](quint64, std::shared_ptr<const model::DoctorReport> r) { show(std::move(r)); };
    h.failed = [this](quint64, const QString& message) {
        m_status->setText(message);
        emit reportChanged();
    };
    h.cancelled = [](quint64) {};
    m_jobs->start<std::shared_ptr<const model::DoctorReport>>(
        [loaded, histories, gpu, finalState, session](const JobControl& control) {
            model::DoctorOptions options;
            // the doctor reads GPU memory: with the pinned host memory shown, it picks the GPU itself
            options.device = gpu;
            options.cancel = control.cancelFlag();
            // the document's own history of the device: not built a second time
            if (auto h = histories.find(gpu); h != histories.end() && h->second) options.history = h->second.get();
            // and its final state, which the document keeps (not made again from the history)
            options.finalState = finalState.get();
            model::DoctorReport r;
            if (!session.empty()) {
                const model::SessionFile file(session);
                // a session without allocator snapshots (a CPU job) opens as an empty snapshot
                const model::Snapshot* snapshot = loaded->snapshot->devices.empty() ? nullptr : loaded->snapshot.get();
                r = model::diagnoseSession(file, snapshot, options);
            } else {
                r = model::diagnoseSnapshot(*loaded->snapshot, options);
            }
            r.file = loaded->path;
            return std::make_shared<const model::DoctorReport>(std::move(r));
        },
        std::move(h), JobText{QString(), QStringLiteral("examine this file")});
}

bool FindingsView::isBusy() const { return m_jobs->isRunning(); }

void FindingsView::show(std::shared_ptr<const model::DoctorReport> report) {
    m_report = std::move(report);
    const model::DoctorReport& r = *m_report;
    const size_t n = r.findings.size();
    QString status = n == 0 ? tr("No findings.") : n == 1 ? tr("1 finding.") : tr("%1 findings.").arg(n);
    if (!r.iterations.iterations.empty())
        status += QLatin1Char(' ') + tr("%1 iterations (%2)%3.")
                                         .arg(r.iterations.iterations.size())
                                         .arg(QString::fromLatin1(model::iterationSourceName(r.iterations.source)))
                                         .arg(r.iterations.lastIncomplete ? tr("; the last is cut off") : QString());
    for (const std::string& n : r.notes) status += QStringLiteral(" ") + qs(n) + QLatin1Char('.');
    m_status->setText(status);
    m_summary->setText(qs(r.summary.nvidiaSmi) + QStringLiteral("\n") + qs(r.summary.batchSize));
    const QSignalBlocker block(m_table);
    m_table->setRowCount(static_cast<int>(r.findings.size()));
    for (int i = 0; i < static_cast<int>(r.findings.size()); ++i) {
        const model::Finding& f = r.findings[static_cast<size_t>(i)];
        auto set = [&](int col, const QString& text) {
            auto* item = new QTableWidgetItem(text);
            if (col == Bytes || col == PerIteration || col == Since) item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
            m_table->setItem(i, col, item);
            return item;
        };
        set(Severity, QString::fromLatin1(model::severityName(f.severity)))->setForeground(severityColour(f.severity));
        set(Rule, qs(f.rule));
        set(Bytes, formatBytes(static_cast<double>(f.bytes)));
        set(PerIteration, f.perIterationBytes ? QStringLiteral("+") + formatBytes(*f.perIterationBytes) : QString());
        set(Since, f.sinceIteration ? QString::number(*f.sinceIteration) : QString());
        set(Title, qs(f.title) + (f.estimated ? tr(" (estimated)") : QString()))->setToolTip(qs(f.evidence));
    }
    m_table->resizeColumnsToContents();
    m_detail->clear();
    m_whatIf->setEnabled(false);
    emit reportChanged();
}

QString FindingsView::bannerText() const {
    if (!m_report || m_report->findings.empty()) return {};
    QStringList parts;
    for (size_t i = 0; i < m_report->findings.size() && i < 3; ++i) parts << qs(m_report->findings[i].title);
    const size_t n = m_report->findings.size();
    QString text = (n == 1 ? tr("1 finding: ") : tr("%1 findings: ").arg(n)) + parts.join(QStringLiteral("; "));
    if (m_report->findings.size() > 3) text += QStringLiteral("; \u2026");
    return text;
}

int FindingsView::findingCount() const { return m_report ? static_cast<int>(m_report->findings.size()) : 0; }

int FindingsView::selectedFinding() const {
    const auto rows = m_table->selectionModel()->selectedRows();
    return rows.isEmpty() ? -1 : rows.front().row();
}

bool FindingsView::canSimulateFix() const {
    const int row = selectedFinding();
    return m_report && row >= 0 && row < findingCount() && model::fixOf(m_report->findings[static_cast<size_t>(row)]).possible;
}

void FindingsView::requestFix() {
    const int row = selectedFinding();
    if (!m_report || row < 0 || row >= findingCount()) return;
    emit fixRequested(model::fixOf(m_report->findings[static_cast<size_t>(row)]));
}

void FindingsView::selectFinding(int row) {
    if (!m_report || row < 0 || row >= findingCount()) {
        m_detail->clear();
        m_whatIf->setEnabled(false);
        return;
    }
    if (selectedFinding() != row) {
        const QSignalBlocker block(m_table);
        m_table->selectRow(row);
    }
    showDetail(row);
    const model::FindingFix fix = model::fixOf(m_report->findings[static_cast<size_t>(row)]);
    m_whatIf->setEnabled(fix.possible);
    m_whatIf->setToolTip(fix.possible ? tr("Replay the trace with %1").arg(qs(fix.asked)) : qs(fix.why));
    emit findingSelected(m_report->findings[static_cast<size_t>(row)]);
    if (!m_doc) return;
    const model::Finding& f = m_report->findings[static_cast<size_t>(row)];
    // its evidence, everywhere: the blocks, the range of entries, the stack
    if (f.deviceIndex >= 0 && f.deviceIndex != m_doc->device()) return;
    const auto& trace = m_doc->deviceData().trace;
    SnapshotDocument::MarkedAddresses marked;
    marked.holder = tr("the %1 finding").arg(qs(f.rule));  // "120 blocks ... hold what the graph-kept finding keeps alive"
    for (int64_t e : f.allocEntries)
        if (e >= 0 && static_cast<size_t>(e) < trace.rows()) marked.addresses.emplace_back(m_doc->device(), trace.addr[static_cast<size_t>(e)]);
    m_doc->setMarkedAddresses(std::move(marked));
    const int64_t last = f.oomEntry >= 0 ? f.oomEntry : m_doc->entryCount() - 1;
    if (!f.allocEntries.empty()) {
        const int64_t first = *std::min_element(f.allocEntries.begin(), f.allocEntries.end());
        m_doc->setSelection(first, last);
    }
    if (last >= 0) m_doc->setCurrentEvent(last);
    if (!f.stacks.empty()) {
        const std::string where = model::whereOf(m_doc->snapshot(), f.stacks.front());
        m_doc->selectAllocation(f.stacks.front(), qs(f.rule) + (where.empty() ? QString() : QStringLiteral(": ") + qs(where)));
    }
}

void FindingsView::showDetail(int row) {
    const model::Finding& f = m_report->findings[static_cast<size_t>(row)];
    QString html = QStringLiteral("<p><b>%1</b></p><p>%2</p>").arg(richText(f.title), richText(f.evidence));
    if (!f.references.empty()) {
        html += QStringLiteral("<p>") + tr("Held by:");
        for (const std::string& r : f.references) html += QStringLiteral(" <code>%1</code>").arg(qs(r).toHtmlEscaped());
        html += QStringLiteral("</p>");
    }
    if (!f.frames.empty()) {
        html += QStringLiteral("<p>") + tr("Allocated at:") + QStringLiteral("<br>");
        for (size_t i = 0; i < f.frames.size() && i < 12; ++i)
            html += QStringLiteral("&nbsp;&nbsp;<code>%1</code> %2:%3<br>")
                        .arg(qs(f.frames[i].name).toHtmlEscaped(), qs(f.frames[i].filename).toHtmlEscaped())
                        .arg(f.frames[i].line);
        html += QStringLiteral("</p>");
    }
    html += QStringLiteral("<p><b>%1</b> %2</p>").arg(tr("Fix:"), richText(f.fix));
    if (f.estimated) html += QStringLiteral("<p><i>%1</i></p>").arg(tr("Estimated from the allocation stacks: the job ran without the memlens agent."));
    m_detail->setHtml(html);
}

QString FindingsView::detailText() const { return m_detail->toPlainText(); }
QString FindingsView::summaryText() const { return m_summary->text(); }

} // namespace memlens::views
