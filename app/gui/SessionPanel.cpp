#include "SessionPanel.h"

#include "IterationStrip.h"
#include "SessionLoader.h"

#include "common/ByteText.h"
#include "timeline/QCustomPlotInclude.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QVBoxLayout>

#include <QSysInfo>

#include <csignal>
#include <cstdlib>

#include <signal.h>

namespace memlens::gui {

SessionPanel::SessionPanel(QWidget* parent) : QWidget(parent) {
    setObjectName(QStringLiteral("sessionPanel"));
    auto* v = new QVBoxLayout(this);
    v->setContentsMargins(4, 2, 4, 2);
    v->setSpacing(2);
    auto* top = new QHBoxLayout;
    m_note = new QLabel(this);
    m_note->setObjectName(QStringLiteral("sessionNote"));
    m_note->setWordWrap(true);
    m_note->setTextInteractionFlags(Qt::TextSelectableByMouse);
    top->addWidget(m_note, 1);
    m_snapshotNow = new QPushButton(tr("Snapshot + graph scan now"), this);
    m_snapshotNow->setObjectName(QStringLiteral("snapshotNow"));
    m_snapshotNow->setToolTip(tr("Ask the recorder of this live session for an allocator snapshot and a retained-graph scan "
                                 "at the job's next iteration boundary (SIGUSR1 to memlens-cli record; it has one request for both)"));
    connect(m_snapshotNow, &QPushButton::clicked, this, [this] {
        if (!m_session || !m_session->file().live()) return;
        const int64_t pid = m_session->file().writerPid();
        if (pid > 0 && ::kill(static_cast<pid_t>(pid), SIGUSR1) == 0)
            emit message(tr("Asked the recorder (pid %1) for a snapshot and a graph scan at the next iteration.").arg(pid));
        else
            emit message(tr("Could not reach the recorder (pid %1).").arg(pid));
    });
    top->addWidget(m_snapshotNow);
    v->addLayout(top);
    m_strip = new IterationStrip(this);
    connect(m_strip, &IterationStrip::iterationClicked, this, &SessionPanel::iterationClicked);
    v->addWidget(m_strip);
    m_figures = new QLabel(this);
    m_figures->setObjectName(QStringLiteral("sessionFigures"));
    m_figures->setWordWrap(true);
    auto* figuresRow = new QHBoxLayout;
    figuresRow->addWidget(m_figures, 1);
    m_legend = new QLabel(this);
    m_legend->setTextFormat(Qt::RichText);
    figuresRow->addWidget(m_legend, 0, Qt::AlignTop);
    v->addLayout(figuresRow);
    m_plot = new QCustomPlot(this);
    m_plot->setObjectName(QStringLiteral("processPlot"));
    m_plot->setMinimumHeight(90);
    m_plot->setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Expanding);
    const struct { const char* name; QColor color; } series[] = {
        {QT_TR_NOOP("NVML process total (nvidia-smi)"), QColor(0xd6, 0x27, 0x28)},
        {QT_TR_NOOP("torch reserved"), QColor(0x4c, 0x78, 0xa8)},
        {QT_TR_NOOP("torch allocated (live tensors)"), QColor(0x54, 0xa2, 0x4b)},
    };
    // the legend is a line of text on the figures' row, as the timeline's: a short plot has no
    // room for a boxed one
    QStringList legend;
    for (const auto& s : series) {
        QCPGraph* g = m_plot->addGraph();
        g->setName(tr(s.name));
        g->setPen(QPen(s.color, 1.5));
        g->setLineStyle(QCPGraph::lsStepLeft);
        legend << QStringLiteral("<span style='color:%1'>&#9644;</span> %2").arg(s.color.name(), tr(s.name).toHtmlEscaped());
    }
    m_legend->setText(legend.join(QStringLiteral(" &nbsp; ")));
    m_plot->xAxis->setLabel(tr("seconds since the job started"));
    m_plot->yAxis->setLabel(tr("MiB"));
    m_span = new QCPItemRect(m_plot);
    QColor shade = palette().color(QPalette::Highlight);
    shade.setAlpha(38);
    m_span->setBrush(shade);
    m_span->setPen(Qt::NoPen);
    m_span->setLayer(QStringLiteral("background"));
    for (QCPItemPosition* p : {m_span->topLeft, m_span->bottomRight}) p->setTypeY(QCPItemPosition::ptAxisRectRatio);
    m_span->setVisible(false);
    m_cursor = new QCPItemStraightLine(m_plot);
    m_cursor->setPen(QPen(palette().color(QPalette::Highlight), 1, Qt::DashLine));
    v->addWidget(m_plot, 1);
    setSession(nullptr);
}

void SessionPanel::setSession(SessionState* session, int device, std::optional<std::pair<int64_t, int64_t>> traceSpan) {
    if (session != m_session) m_strip->setHighlighted({});  // another session: no finding of it is selected
    m_session = session;
    m_device = device;
    m_traceSpan = traceSpan;
    refresh();
}

int SessionPanel::sampleCount() const { return m_session ? static_cast<int>(m_session->file().samples().size()) : 0; }

QString SessionPanel::noteText() const { return m_note->text(); }
QString SessionPanel::figuresText() const { return m_figures->text(); }

int64_t SessionPanel::shownTimeUs() const {
    if (!m_session) return 0;
    if (const auto* s = m_session->shownSnapshot()) return s->timeUs;
    for (const auto& it : m_session->file().iterations())
        if (it.index == m_session->iteration()) return it.endUs;
    return 0;
}

const model::DeviceSample* SessionPanel::nearestTorch(int64_t timeUs) const {
    if (!m_session || timeUs == 0) return nullptr;
    const model::DeviceSample* best = nullptr;
    for (const auto& s : m_session->file().samples()) {
        if (s.source != "torch" || s.device != m_device || !s.reserved) continue;
        if (!best || std::llabs(s.timeUs - timeUs) < std::llabs(best->timeUs - timeUs)) best = &s;
    }
    return best;
}

std::optional<model::TimedBytes> SessionPanel::nearestNvml(int64_t timeUs) const {
    if (m_nvml.empty() || timeUs == 0) return std::nullopt;
    auto at = std::lower_bound(m_nvml.begin(), m_nvml.end(), timeUs,
                               [](const model::TimedBytes& s, int64_t t) { return s.timeUs < t; });
    if (at == m_nvml.end() || (at != m_nvml.begin() && timeUs - std::prev(at)->timeUs < at->timeUs - timeUs)) --at;
    return *at;
}

std::optional<model::ProcessFigures> SessionPanel::processFigures() const {
    const auto nvml = nearestNvml(shownTimeUs());
    if (!nvml || !m_session->shownSnapshot()) return std::nullopt;
    model::ProcessFigures f;
    // only the total is measured; the breakdown derives "context and other libraries" from it
    f.processTotal = static_cast<uint64_t>(nvml->bytes);
    return f;
}

void SessionPanel::refresh() {
    const bool on = m_session != nullptr;
    m_snapshotNow->setEnabled(on && m_session->file().live() && m_session->file().writerPid() > 0 &&
                              m_session->file().writerHost() == QSysInfo::machineHostName().toStdString());
    if (!on) {
        m_nvml.clear();
        m_note->setText(tr("Not a session: open a .memlens file (memlens-cli record) to see iterations and process samples."));
        m_figures->clear();
        m_strip->setIterations({}, {});
        refreshPlot();
        return;
    }
    const model::SessionFile& f = m_session->file();
    m_nvml = model::nvmlProcessSeries(f.samples(), m_device);
    std::vector<int64_t> withSnapshot;
    for (const auto& s : f.snapshots()) withSnapshot.push_back(s.iteration);
    m_strip->setIterations(f.iterations(), std::move(withSnapshot));
    m_strip->setCurrent(m_session->iteration());

    int train = 0, eval = 0;
    for (const auto& it : f.iterations()) {
        if (it.phase == "train") ++train;
        else if (it.phase == "eval") ++eval;
    }
    QStringList parts;
    parts << tr("%1 iterations (%2 train, %3 eval)").arg(f.iterations().size()).arg(train).arg(eval);
    parts << tr("%1 snapshots").arg(f.snapshots().size());
    if (f.live()) parts << tr("live");
    else if (!f.finished()) parts << tr("not finished (the recorder stopped)");
    QString note = parts.join(QStringLiteral(" · "));
    const auto& proc = f.process();
    if (f.snapshots().empty()) {
        if (proc.allocatorSnapshots == false || proc.cuda.empty())
            note += tr(" — no allocator snapshots: the job ran without CUDA");
        else
            note += tr(" — no allocator snapshots yet");
        if (!proc.snapshotsNote.empty()) note += QStringLiteral(" (%1)").arg(QString::fromStdString(proc.snapshotsNote));
    } else if (const auto* s = m_session->shownSnapshot()) {
        note += tr(" — showing snapshot %1 (%2, iteration %3)").arg(s->id).arg(QString::fromStdString(s->trigger)).arg(s->iteration);
        if (m_session->iteration() != s->iteration && m_session->iteration() > 0)
            note += tr("; iteration %1 has no snapshot").arg(m_session->iteration());
    }
    m_note->setText(note);

    const int64_t t = shownTimeUs();
    const auto nvml = nearestNvml(t);
    const model::DeviceSample* torch = nearestTorch(t);
    if (!nvml && !torch) {
        m_figures->setText(f.samples().empty() ? tr("No process samples (NVML absent and no torch readings).") : QString());
    } else {
        QStringList fig;
        if (nvml) fig << tr("NVML process total %1").arg(views::formatBytes(nvml->bytes));
        if (torch && torch->reserved) fig << tr("torch reserved %1").arg(views::formatBytes(*torch->reserved));
        if (torch && torch->allocated) fig << tr("allocated %1").arg(views::formatBytes(*torch->allocated));
        QString text = tr("Device %1, nearest samples: ").arg(m_device) + fig.join(QStringLiteral(", "));
        if (nvml && torch && torch->reserved)
            text += tr(". Gap nvidia-smi shows beyond PyTorch: %1 (estimated: CUDA context and other libraries, "
                       "process total − reserved; samples up to %2 ms apart)")
                        .arg(views::formatBytes(nvml->bytes - *torch->reserved))
                        .arg(std::llabs(nvml->timeUs - torch->timeUs) / 1000);
        m_figures->setText(text);
    }
    refreshPlot();
}

std::optional<std::pair<double, double>> SessionPanel::traceSpanSeconds() const {
    if (!m_span->visible()) return std::nullopt;
    return std::make_pair(m_span->topLeft->coords().x(), m_span->bottomRight->coords().x());
}

void SessionPanel::refreshPlot() {
    // without samples (no NVML, no CUDA) the line above says so; an empty plot would only take room
    m_plot->setVisible(sampleCount() > 0);
    m_legend->setVisible(sampleCount() > 0);
    for (int i = 0; i < 3; ++i) m_plot->graph(i)->data()->clear();
    if (m_session) {
        const auto& f = m_session->file();
        int64_t t0 = f.process().startedUs;
        if (t0 == 0 && !f.samples().empty()) t0 = f.samples().front().timeUs;
        const double MiB = 1024.0 * 1024.0;
        for (const auto& s : m_nvml) m_plot->graph(0)->addData(double(s.timeUs - t0) / 1e6, double(s.bytes) / MiB);
        for (const auto& s : f.samples()) {
            if (s.source != "torch" || s.device != m_device) continue;
            const double x = double(s.timeUs - t0) / 1e6;
            if (s.reserved) m_plot->graph(1)->addData(x, double(*s.reserved) / MiB);
            if (s.allocated) m_plot->graph(2)->addData(x, double(*s.allocated) / MiB);
        }
        const int64_t t = shownTimeUs();
        m_cursor->setVisible(t != 0);
        m_cursor->point1->setCoords(double(t - t0) / 1e6, 0);
        m_cursor->point2->setCoords(double(t - t0) / 1e6, 1);
        m_span->setVisible(m_traceSpan.has_value());
        if (m_traceSpan) {
            m_span->topLeft->setCoords(double(m_traceSpan->first - t0) / 1e6, 0);
            m_span->bottomRight->setCoords(double(m_traceSpan->second - t0) / 1e6, 1);
        }
    } else {
        m_cursor->setVisible(false);
        m_span->setVisible(false);
    }
    m_plot->rescaleAxes();
    if (m_span->visible()) {  // the span in view too
        const QCPRange x = m_plot->xAxis->range();
        m_plot->xAxis->setRange(std::min(x.lower, m_span->topLeft->coords().x()), std::max(x.upper, m_span->bottomRight->coords().x()));
    }
    m_plot->yAxis->setRangeLower(0);
    m_plot->yAxis->setRangeUpper(std::max(1.0, m_plot->yAxis->range().upper * 1.08));
    m_plot->replot();
}

} // namespace memlens::gui
