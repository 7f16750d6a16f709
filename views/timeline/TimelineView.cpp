#include "timeline/TimelineView.h"

#include "common/PlaceholderPages.h"

#include "timeline/ByteAxisTicker.h"
#include "common/ByteText.h"
#include "timeline/EntryAxisTicker.h"
#include "document/SnapshotDocument.h"
#include "core/StackFrames.h"
#include "timeline/TimelineBandsItem.h"
#include "timeline/TimelineOverlayItem.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QCheckBox>
#include <QLabel>
#include <QMenu>
#include <QSpinBox>
#include <QToolButton>
#include <QToolTip>
#include <QVBoxLayout>

#include "timeline/QCustomPlotInclude.h"

#include <algorithm>
#include <cmath>

namespace memlens::views {

namespace {

constexpr int kMarginLeft = 78;
constexpr int kMarginRight = 18;
constexpr int kMarginBottom = 40;
constexpr int kMarginTop = 10;
constexpr int kDragThreshold = 4;

const QColor kLiveColor(0x1f, 0x23, 0x2b);
const QColor kReservedLine(0x4f, 0x7c, 0xb3);
const QColor kReservedFill(0xe3, 0xeb, 0xf5);
const QColor kProcessColor(0xd6, 0x27, 0x28);  // nvidia-smi, as in the session's process plot
const QColor kSimulatedColor(0x94, 0x67, 0xbd);  // a what-if simulation's reserved and live bytes

QString hexAddress(uint64_t a) { return QStringLiteral("0x") + QString::number(a, 16); }
QString entryNumber(int64_t i) { return QLocale::system().toString(static_cast<qlonglong>(i)); }

QString htmlEscaped(const std::string& s) { return QString::fromStdString(s).toHtmlEscaped(); }

} // namespace

TimelineView::TimelineView(QWidget* parent) : QWidget(parent) {
    m_chooseTimer = new QTimer(this);
    m_chooseTimer->setSingleShot(true);
    m_chooseTimer->setInterval(150);
    connect(m_chooseTimer, &QTimer::timeout, this, &TimelineView::chooseBands);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(0);
    auto* bar = new QWidget(this);
    buildToolbar(bar);
    layout->addWidget(bar);
    m_notice = new QLabel(this);
    m_notice->setTextFormat(Qt::PlainText);
    m_notice->setWordWrap(true);
    m_notice->setContentsMargins(8, 3, 8, 3);
    m_notice->setStyleSheet(QStringLiteral("background: #fff4d6; color: #5a4500; border-bottom: 1px solid #e8d9a8;"));
    m_notice->hide();
    layout->addWidget(m_notice);

    m_pages = new PlaceholderPages(this);
    m_pages->label()->setMargin(24);
    m_pages->label()->setEnabled(true);
    m_pages->label()->setStyleSheet(QStringLiteral("color: #666; font-size: 11pt;"));
    m_plot = new QCustomPlot(m_pages);
    m_pages->setContent(m_plot);
    layout->addWidget(m_pages, 1);
    setupPlot();
    rebuild();
}

TimelineView::~TimelineView() = default;

void TimelineView::buildToolbar(QWidget* bar) {
    auto* row = new QHBoxLayout(bar);
    row->setContentsMargins(6, 3, 6, 3);
    row->setSpacing(6);
    row->addWidget(new QLabel(tr("X axis:"), bar));
    m_xMode = new QComboBox(bar);
    m_xMode->addItem(tr("Trace entries"));
    m_xMode->addItem(tr("Time"));
    m_xMode->setToolTip(tr("Place entries at their index in the trace, or at their time_us"));
    connect(m_xMode, &QComboBox::activated, this, [this](int i) { setTimeAxis(i == 1); });
    row->addWidget(m_xMode);
    row->addSpacing(8);
    auto* label = new QLabel(tr("Allocations drawn:"), bar);
    row->addWidget(label);
    m_largestBox = new QSpinBox(bar);
    m_largestBox->setRange(0, 1000000);
    m_largestBox->setSingleStep(1000);
    m_largestBox->setValue(m_largest);
    m_largestBox->setKeyboardTracking(false);
    m_largestBox->setToolTip(tr("How many allocations get a band of their own: those that cover the most of "
                                "the visible range (bytes x time), chosen again as you zoom; the others are "
                                "summed in the grey band at the bottom. At most three per pixel of the plot's "
                                "width are drawn."));
    label->setBuddy(m_largestBox);
    connect(m_largestBox, &QSpinBox::valueChanged, this, &TimelineView::setLargestCount);
    row->addWidget(m_largestBox);
    row->addSpacing(8);
    auto* fitButton = new QToolButton(bar);
    fitButton->setText(tr("Fit"));
    fitButton->setToolTip(tr("Show the whole trace"));
    connect(fitButton, &QToolButton::clicked, this, &TimelineView::fit);
    row->addWidget(fitButton);
    m_zoomSelection = new QToolButton(bar);
    m_zoomSelection->setText(tr("Zoom to selection"));
    m_zoomSelection->setToolTip(tr("Show only the selected range (drag on the timeline to select one)"));
    connect(m_zoomSelection, &QToolButton::clicked, this, &TimelineView::zoomToSelection);
    row->addWidget(m_zoomSelection);
    m_categoryBox = new QCheckBox(tr("Colour by category"), bar);
    m_categoryBox->setToolTip(tr("Parameters, gradients, optimizer state, saved for backward, inputs and other memory, "
                                 "estimated from the stacks that allocated them"));
    connect(m_categoryBox, &QCheckBox::toggled, this, &TimelineView::setColourByCategory);
    row->addWidget(m_categoryBox);
    row->addStretch(1);
    m_legend = new QLabel(bar);
    m_legend->setTextFormat(Qt::RichText);
    row->addWidget(m_legend);
}

void TimelineView::setupPlot() {
    m_plot->setMouseTracking(true);
    m_plot->setStatusTip(tr("Click: make an entry current · drag: select a range · wheel: zoom · "
                            "right drag: pan · right click: zoom to the selection, back, clear"));
    m_plot->installEventFilter(this);
    m_plot->setInteractions({});
    m_plot->setNotAntialiasedElements(QCP::aeAll);
    m_plot->setAntialiasedElements(QCP::aeAxes | QCP::aeGrid);
    m_plot->setPlottingHint(QCP::phCacheLabels, true);
    QCPAxisRect* rect = m_plot->axisRect();
    rect->setAutoMargins(QCP::msNone);
    rect->setMargins(QMargins(kMarginLeft, kMarginTop, kMarginRight, kMarginBottom));

    m_xTicker = QSharedPointer<EntryAxisTicker>::create();
    m_plot->xAxis->setTicker(m_xTicker);
    m_plot->yAxis->setTicker(QSharedPointer<ByteAxisTicker>::create());
    m_plot->yAxis->ticker()->setTickCount(6);
    m_plot->xAxis->ticker()->setTickCount(8);
    for (QCPAxis* a : {m_plot->xAxis, m_plot->yAxis}) {
        a->setBasePen(QPen(QColor(0x88, 0x88, 0x88)));
        a->setTickPen(QPen(QColor(0x88, 0x88, 0x88)));
        a->setSubTickPen(QPen(QColor(0xaa, 0xaa, 0xaa)));
        a->setTickLabelColor(QColor(0x33, 0x33, 0x33));
        a->setLabelColor(QColor(0x33, 0x33, 0x33));
        a->grid()->setPen(QPen(QColor(0xe4, 0xe4, 0xe4), 1, Qt::SolidLine));
        a->grid()->setZeroLinePen(Qt::NoPen);
    }
    m_plot->xAxis->grid()->setVisible(false);

    m_reservedFill = m_plot->addGraph();
    m_reservedFill->setPen(Qt::NoPen);
    m_reservedFill->setBrush(kReservedFill);
    m_bands = new TimelineBandsItem(m_plot);
    m_reservedLine = m_plot->addGraph();
    // 1 px pens: wider ones go through Qt's stroker, which costs ten times more per replot
    m_reservedLine->setPen(QPen(kReservedLine, 1));
    m_liveLine = m_plot->addGraph();
    m_liveLine->setPen(QPen(kLiveColor, 1));
    m_processLine = m_plot->addGraph();
    m_processLine->setPen(QPen(kProcessColor, 1));
    m_processLine->setLineStyle(QCPGraph::lsStepLeft);
    m_simReservedLine = m_plot->addGraph();
    m_simReservedLine->setPen(QPen(kSimulatedColor, 1, Qt::DashLine));
    m_simReservedLine->setLineStyle(QCPGraph::lsStepLeft);
    m_simLiveLine = m_plot->addGraph();
    m_simLiveLine->setPen(QPen(kSimulatedColor, 1, Qt::DotLine));
    m_simLiveLine->setLineStyle(QCPGraph::lsStepLeft);
    for (QCPGraph* g : {m_reservedFill, m_reservedLine, m_liveLine, m_processLine, m_simReservedLine, m_simLiveLine}) {
        g->setAdaptiveSampling(false);
        g->setSelectable(QCP::stNone);
    }
    m_overlay = new TimelineOverlayItem(m_plot);
    m_overlay->setLayer(QStringLiteral("overlay"));
    m_bands->setClipAxisRect(rect);
    m_overlay->setClipAxisRect(rect);

    connect(m_plot, &QCustomPlot::beforeReplot, this, &TimelineView::ensureLayout);
    connect(m_plot, &QCustomPlot::mousePress, this, &TimelineView::onMousePress);
    connect(m_plot, &QCustomPlot::mouseMove, this, &TimelineView::onMouseMove);
    connect(m_plot, &QCustomPlot::mouseRelease, this, &TimelineView::onMouseRelease);
    connect(m_plot, &QCustomPlot::mouseWheel, this, &TimelineView::onWheel);
    connect(m_plot, &QCustomPlot::mouseDoubleClick, this, [this](QMouseEvent*) { fit(); });

    updateLegend();
}

void TimelineView::setColourByCategory(bool on) {
    if (m_categoryBox->isChecked() != on) {
        const QSignalBlocker block(m_categoryBox);
        m_categoryBox->setChecked(on);
    }
    m_byCategory = on;
    if (on && m_doc && m_rolesOf != &m_doc->snapshot()) {
        m_roles = model::stackRoles(m_doc->snapshot());
        m_rolesOf = &m_doc->snapshot();
    }
    m_bands->setCategoryRoles(on && m_doc ? &m_roles : nullptr);
    updateLegend();
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

QString TimelineView::legendText() const { return m_legend->text(); }

QString TimelineView::noticeText() const { return m_notice->isHidden() ? QString() : m_notice->text(); }

// Says so when the trace starts mid-run: torch's ring buffer (max_entries) overflowed and dropped
// the entries before the first one kept (trace_alloc_overflowed, torch after 2.11).
void TimelineView::updateNotice() {
    QString text;
    if (m_doc && m_doc->entryCount() > 0) {
        const model::DeviceData& dd = m_doc->deviceData();
        if (dd.traceTruncated()) {
            // each allocation whose alloc entry is missing (a free without it, a live block the
            // trace never mentions) stands for at least one dropped entry
            int64_t missing = 0;
            for (const AllocationLifetime& l : m_doc->lifetimes().all()) {
                if (!l.allocatedBeforeRecording()) break;  // sorted: those from before the trace first
                ++missing;
            }
            const QLocale locale = QLocale::system();
            text = dd.traceMaxEntries
                       ? tr("The trace starts mid-run: its ring buffer of %1 entries overflowed, so the entries before "
                            "the first one kept were dropped (_record_memory_history(max_entries=...)).")
                             .arg(locale.toString(static_cast<qlonglong>(*dd.traceMaxEntries)))
                       : tr("The trace starts mid-run: its ring buffer overflowed, so the entries before the first "
                            "one kept were dropped.");
            if (missing == 1)
                text += QLatin1Char(' ') + tr("At least 1 allocation was made in the dropped part (its free or its "
                                              "block is here, its alloc is not): drawn hatched, its stack may be missing.");
            else if (missing > 1)
                text += QLatin1Char(' ') + tr("At least %1 allocations were made in the dropped part (their free or "
                                              "their block is here, their alloc is not): drawn hatched, their stacks "
                                              "may be missing.")
                                               .arg(locale.toString(static_cast<qlonglong>(missing)));
        }
    }
    // what the file has that memlens does not show yet: said, not dropped
    if (m_doc)
        for (const std::string& n : m_doc->snapshot().notes)
            text += (text.isEmpty() ? QString() : QStringLiteral("\n")) + tr("Not shown: %1.").arg(QString::fromStdString(n));
    m_notice->setText(text);
    m_notice->setVisible(!text.isEmpty());
}

// One dashed line per private pool (CUDA graphs, MemPool) with the pool's reserved bytes.
void TimelineView::updatePoolLines() {
    static const QColor kPoolColors[] = {QColor(0x8c, 0x56, 0x4b), QColor(0x17, 0xbe, 0xcf), QColor(0xbc, 0xbd, 0x22),
                                         QColor(0xe3, 0x77, 0xc2)};
    for (QCPGraph* g : m_poolLines) m_plot->removeGraph(g);
    m_poolLines.clear();
    if (!m_doc || m_doc->entryCount() == 0) return;
    const auto& pools = m_doc->timeline().privatePools;
    for (size_t p = 0; p < pools.size(); ++p) {
        QCPGraph* g = m_plot->addGraph();
        g->setPen(QPen(kPoolColors[p % std::size(kPoolColors)], 2, Qt::DashLine));  // few points: 2 px is cheap
        g->setAdaptiveSampling(false);
        g->setSelectable(QCP::stNone);
        g->setName(QString::fromStdString(model::poolName(pools[p].pool)));
        m_poolLines.push_back(g);
    }
    m_dirty = true;
    updateLegend();
}

void TimelineView::updateLegend() {
    if (m_byCategory) {
        QString text = tr("<span style='color:%1'>&#9644;</span> live &nbsp; <span style='color:%2'>&#9644;</span> reserved &nbsp;")
                           .arg(kLiveColor.name(), kReservedLine.name());
        for (int c = 0; c < model::kMemoryCategoryCount; ++c) {
            const auto cat = static_cast<model::MemoryCategory>(c);
            text += QStringLiteral(" <span style='color:%1'>&#9632;</span> %2")
                        .arg(TimelineBandsItem::categoryColor(cat).name(), QString::fromLatin1(model::memoryCategoryLabel(cat)).toLower());
        }
        text += tr(" (estimated)");
        if (m_groups.groupCount() > 0) text += tr(" &nbsp; &#9776; many allocations of one call site, summed");
        m_legend->setText(text);
        return;
    }
    QString text =
        tr("<span style='color:%1'>&#9644;</span> live &nbsp; <span style='color:%2'>&#9644;</span> reserved &nbsp; "
           "<span style='color:%3'>&#9632;</span>&#8202;<span style='color:%4'>&#9632;</span>&#8202;"
           "<span style='color:%5'>&#9632;</span> allocations &nbsp; <span style='color:%6'>&#9632;</span> other")
            .arg(kLiveColor.name(), kReservedLine.name(), TimelineBandsItem::colorFor(0, 0).name(),
                 TimelineBandsItem::colorFor(1, 0).name(), TimelineBandsItem::colorFor(2, 0).name(),
                 TimelineBandsItem::otherColor().name());
    if (!m_processPlaced.empty())
        text += tr(" &nbsp; <span style='color:%1'>&#9644;</span> nvidia-smi (NVML)").arg(kProcessColor.name());
    if (m_doc && m_doc->lifetimes().size() > 0 && m_doc->lifetimes()[0].allocatedBeforeRecording())
        text += tr(" &nbsp; &#9636; allocated before the trace");
    if (m_groups.groupCount() > 0) text += tr(" &nbsp; &#9776; many allocations of one call site, summed");
    for (QCPGraph* g : m_poolLines)
        text += tr(" &nbsp; <span style='color:%1'>- -</span> %2 reserved").arg(g->pen().color().name(), g->name().toHtmlEscaped());
    if (!m_simulatedSeries.empty())
        text += tr(" &nbsp; <span style='color:%1'>- -</span> simulated reserved <span style='color:%1'>&middot;&middot;&middot;</span> "
                   "simulated live")
                    .arg(kSimulatedColor.name());
    m_legend->setText(text);
}

void TimelineView::setSimulatedSeries(std::vector<model::SeriesPoint> series) {
    if (series.empty() && m_simulatedSeries.empty()) return;  // what-if clearing what it never set
    m_simulatedSeries = std::move(series);
    updateSimulatedLines();
    m_dirty = true;
    scheduleReplot();
}

void TimelineView::updateSimulatedLines() {
    QVector<QCPGraphData> reserved, live;
    reserved.reserve(static_cast<qsizetype>(m_simulatedSeries.size() + 1));
    live.reserve(reserved.capacity());
    for (const model::SeriesPoint& p : m_simulatedSeries) {
        if (p.entry < 0 || p.entry >= m_axis.count()) continue;
        const double x = m_axis.x(p.entry);
        reserved.append(QCPGraphData(x, static_cast<double>(p.reserved)));
        live.append(QCPGraphData(x, static_cast<double>(p.live)));
    }
    // the last point holds to the end of the trace, like the recorded curves
    if (!reserved.isEmpty() && reserved.back().key < m_axis.endX()) {
        reserved.append(QCPGraphData(m_axis.endX(), reserved.back().value));
        live.append(QCPGraphData(m_axis.endX(), live.back().value));
    }
    m_simReservedLine->data()->set(reserved, true);
    m_simLiveLine->data()->set(live, true);
    updateLegend();
}

void TimelineView::setProcessSeries(std::vector<model::TimedBytes> series) {
    m_processSeries = std::move(series);
    updateProcessLine();
    m_dirty = true;
    scheduleReplot();
}

void TimelineView::updateProcessLine() {
    m_processPlaced.clear();
    if (!m_processSeries.empty() && m_axis.count() > 0 && timeAxisAvailable())
        m_processPlaced = views::placeProcessSamples(m_processSeries, m_doc->deviceData().trace.timeUs, m_axis);
    QVector<QCPGraphData> data;
    data.reserve(static_cast<qsizetype>(m_processPlaced.size() + 1));
    for (const PlacedSample& p : m_processPlaced) data.append(QCPGraphData(p.x, p.bytes));
    // the last sample holds to the end of the trace
    if (!m_processPlaced.empty() && m_processPlaced.back().x < m_axis.endX())
        data.append(QCPGraphData(m_axis.endX(), m_processPlaced.back().bytes));
    m_processLine->data()->set(data, true);
    updateLegend();
}

void TimelineView::setDocument(SnapshotDocument* doc) {
    if (m_doc == doc) return;
    if (m_doc) disconnect(m_doc, nullptr, this, nullptr);
    m_doc = doc;
    m_rolesOf = nullptr;  // the roles are the new document's, worked out when it is drawn
    if (doc) {
        connect(doc, &SnapshotDocument::deviceChanged, this, [this] { rebuild(); });
        connect(doc, &SnapshotDocument::currentEventChanged, this, [this](int64_t i) {
            m_overlay->setCurrent(i);
            showEntry(i);
            scheduleReplot();
        });
        connect(doc, &SnapshotDocument::selectionChanged, this, [this] {
            m_overlay->setSelection(m_doc->selection());
            m_zoomSelection->setEnabled(m_doc->selection().has_value());
            scheduleReplot();
        });
        connect(doc, &SnapshotDocument::allocationSelected, this, [this](model::StackId stack, const QString&) {
            m_bands->setHighlightedStack(stack);
            scheduleReplot();
        });
        connect(doc, &SnapshotDocument::lifetimesReady, this, [this] {  // the bands, after the curves
            updateNotice();
            m_chosenFor = {0, -1};
            chooseBands();
        });
        connect(doc, &QObject::destroyed, this, [this] { rebuild(); });
    }
    rebuild();
}

SnapshotDocument* TimelineView::document() const { return m_doc; }

bool TimelineView::timeAxisAvailable() const {
    return m_doc && m_doc->entryCount() > 0 && m_doc->timelineExtras().timeAxis;
}

void TimelineView::rebuild() {
    const bool wantTime = m_axis.isTime();
    m_hovered = -1;
    m_bands->setHoveredLifetime(-1);
    m_chosen.clear();
    m_groups = StackAggregates();
    m_layout = TimelineLayout();
    m_bands->setLayout(nullptr, nullptr);
    m_overlay->setMarkers(nullptr, nullptr);
    const bool haveTrace = m_doc && m_doc->entryCount() > 0;
    if (haveTrace) {
        const bool time = wantTime && timeAxisAvailable();
        m_axis = time ? EntryAxis::byTime(m_doc->deviceData().trace.timeUs) : EntryAxis::byIndex(m_doc->entryCount());
        m_overlay->setMarkers(&m_doc->markers(), &m_axis);
        m_overlay->setCurrent(m_doc->currentEvent());
        m_overlay->setSelection(m_doc->selection());
        m_bands->setHighlightedStack(m_doc->selectedStack());
        if (m_byCategory && m_rolesOf != &m_doc->snapshot()) setColourByCategory(true);
    } else {
        m_axis = EntryAxis::byIndex(0);
    }
    m_xTicker->setTimeMode(m_axis.isTime());
    m_plot->xAxis->setLabel(m_axis.isTime() ? tr("Time since the first entry") : tr("Trace entry"));
    m_xMode->setCurrentIndex(m_axis.isTime() ? 1 : 0);
    m_xMode->setEnabled(timeAxisAvailable());
    m_zoomSelection->setEnabled(m_doc && m_doc->selection().has_value());
    m_plot->axisRect()->setMargins(
        QMargins(kMarginLeft, kMarginTop + m_overlay->lanesHeight(), kMarginRight, kMarginBottom));
    updateProcessLine();
    updateSimulatedLines();
    updatePoolLines();
    updateNotice();
    updateEmptyState();
    fit();
    m_chosenFor = {0, -1};
    chooseBands();  // the first picture has its bands at once
}

void TimelineView::chooseBands() {
    m_chooseTimer->stop();
    if (!m_doc || m_doc->entryCount() == 0) {
        m_chosen.clear();
        m_groups = StackAggregates();
        m_chosenFor = {0, -1};
        updateLegend();
        return;
    }
    const auto range = xRange();
    // per pixel of the plot once it is laid out (before, its width says nothing)
    const int columns = m_plot->axisRect()->width();
    const int count = columns > 0 ? std::min(m_largest, kMaxBandsPerPixel * columns) : m_largest;
    if (range == m_chosenFor && count == m_chosenCount) return;
    m_chosen = m_doc->lifetimes().mostVisible(static_cast<size_t>(count), m_axis, range.first, range.second,
                                              kMaxBandCover);
    // Where those leave most of the picture grey (thousands of equal allocations, none a pixel
    // tall), the rest summed by stack: over the range and half of it on either side, for panning.
    const int64_t last = m_axis.count() - 1;
    const int64_t e0 = std::clamp<int64_t>(m_axis.entryAt(range.first), 0, last);
    const int64_t e1 = std::clamp<int64_t>(m_axis.entryAt(range.second), e0, last);
    const int64_t pad = (e1 - e0) / 2;
    m_groups = StackAggregates::compute(m_doc->lifetimes(), m_chosen, std::max<int64_t>(0, e0 - pad),
                                        std::min(last, e1 + pad));
    updateLegend();  // it names the summed bands where there are some
    m_chosenFor = range;
    m_chosenCount = count;
    m_dirty = true;
    scheduleReplot();
}

void TimelineView::updateEmptyState() {
    QString text;
    if (!m_doc) {
        text = tr("No snapshot is open.");
    } else if (m_doc->devices().isEmpty()) {
        text = tr("This snapshot is empty: it has no segments and no trace entries on any device.");
    } else if (m_doc->entryCount() == 0) {
        text = tr("%1 has no trace entries, so there is no timeline to draw.\n\n"
                  "Record them with torch.cuda.memory._record_memory_history() before the code of interest, "
                  "then take the snapshot with torch.cuda.memory._dump_snapshot(). "
                  "The block map still shows the memory at the moment of the snapshot.")
                   .arg(QString::fromStdString(model::deviceLabel(m_doc->device())));
    }
    if (text.isEmpty()) m_pages->showContent();
    else m_pages->showPlaceholder(text);
}

void TimelineView::setTimeAxis(bool time) {
    if (time && !timeAxisAvailable()) time = false;
    if (time == m_axis.isTime()) return;
    // keep the same entries in view
    const auto [x0, x1] = xRange();
    const int64_t e0 = std::max<int64_t>(0, m_axis.entryAt(x0));
    const int64_t e1 = std::max<int64_t>(e0, m_axis.entryAt(x1));
    const bool full = x0 <= m_axis.startX() && x1 >= m_axis.endX();
    m_axis = time ? EntryAxis::byTime(m_doc->deviceData().trace.timeUs) : EntryAxis::byIndex(m_doc->entryCount());
    m_chosenFor = {0, -1};  // the same numbers mean other entries now
    m_xTicker->setTimeMode(time);
    m_plot->xAxis->setLabel(time ? tr("Time since the first entry") : tr("Trace entry"));
    m_xMode->setCurrentIndex(time ? 1 : 0);
    updateProcessLine();
    updateSimulatedLines();
    if (full) {
        fit();
    } else {
        const double n0 = m_axis.x(e0);
        const double n1 = e1 + 1 < m_axis.count() ? m_axis.x(e1 + 1) : m_axis.endX();
        setXRange(n0, n1);
    }
}

void TimelineView::setLargestCount(int n) {
    n = std::max(0, n);
    if (n == m_largest) return;
    m_largest = n;
    if (m_largestBox->value() != n) m_largestBox->setValue(n);
    m_chosenFor = {0, -1};
    chooseBands();
    m_hovered = -1;
    m_bands->setHoveredLifetime(-1);
    m_dirty = true;
    scheduleReplot();
}

double TimelineView::minimumSpan() const { return m_axis.isTime() ? 10.0 : 8.0; }

void TimelineView::setXRange(double x0, double x1) {
    if (x1 < x0) std::swap(x0, x1);
    const double lo = m_axis.startX(), hi = std::max(m_axis.endX(), lo + 1);
    const double full = hi - lo;
    double span = std::clamp(x1 - x0, std::min(minimumSpan(), full), full);
    double mid = (x0 + x1) / 2;
    x0 = mid - span / 2;
    if (x0 < lo) x0 = lo;
    if (x0 + span > hi) x0 = hi - span;
    m_plot->xAxis->setRange(x0, x0 + span);
    m_dirty = true;
    scheduleReplot();
    m_chooseTimer->start();  // the bands follow once the range rests
}

std::pair<double, double> TimelineView::xRange() const {
    return {m_plot->xAxis->range().lower, m_plot->xAxis->range().upper};
}

void TimelineView::fit() { setXRange(m_axis.startX(), std::max(m_axis.endX(), m_axis.startX() + 1)); }

void TimelineView::zoomToSelection() {
    if (!m_doc || !m_doc->selection() || m_axis.count() == 0) return;
    const auto [first, last] = *m_doc->selection();
    const double x0 = m_axis.x(first);
    const double x1 = last + 1 < m_axis.count() ? m_axis.x(last + 1) : m_axis.endX();
    const double pad = (x1 - x0) * 0.03;
    setXRange(x0 - pad, x1 + pad);
}

void TimelineView::showEntry(int64_t entry) {
    if (entry < 0 || entry >= m_axis.count()) return;
    const double x = m_axis.x(entry);
    const auto [x0, x1] = xRange();
    if (x >= x0 && x <= x1) return;
    const double span = x1 - x0;
    setXRange(x - span / 2, x + span / 2);
}

int TimelineView::plotWidth() const {
    const QMargins m = m_plot->axisRect()->margins();
    return std::max(0, m_plot->viewport().width() - m.left() - m.right());
}

void TimelineView::scheduleReplot() { m_plot->replot(QCustomPlot::rpQueuedReplot); }

void TimelineView::redraw() {
    m_dirty = true;
    m_plot->replot(QCustomPlot::rpImmediateRefresh);
}

void TimelineView::ensureLayout() {
    const auto [x0, x1] = xRange();
    const int width = plotWidth();
    if (!m_dirty && width == m_layoutWidth && x0 == m_layoutX0 && x1 == m_layoutX1) return;
    m_layoutX0 = x0;
    m_layoutX1 = x1;
    m_layoutWidth = width;
    m_dirty = false;
    if (!m_doc || m_axis.count() == 0) {
        m_layout = TimelineLayout();
    } else {
        m_layout = TimelineLayout::compute(m_axis, m_doc->timeline(), m_doc->lifetimes(), m_chosen, x0, x1, width,
                                           &m_doc->timelineExtras().live, &m_doc->timelineExtras().reserved, &m_groups);
    }
    applyLayout();
}

void TimelineView::applyLayout() {
    const auto& cols = m_layout.binning().columns();
    QVector<QCPGraphData> live, reserved;
    live.reserve(static_cast<qsizetype>(cols.size() * 2));
    reserved.reserve(static_cast<qsizetype>(cols.size() * 2));
    auto add = [](QVector<QCPGraphData>& out, double x, const ColumnEnvelope& e) {
        // a vertical stroke per column, in the direction the values go, so the line stays continuous
        const bool rising = e.lastValue >= e.firstValue;
        out.append(QCPGraphData(x, static_cast<double>(rising ? e.min : e.max)));
        if (e.min != e.max) out.append(QCPGraphData(x, static_cast<double>(rising ? e.max : e.min)));
    };
    // each column's middle, where its stroke goes
    const double halfColumn = (m_layout.binning().x1() - m_layout.binning().x0()) / (2.0 * m_layout.width());
    auto columnX = [&](size_t c) { return m_layout.binning().columnStart(static_cast<int>(c)) + halfColumn; };
    for (size_t c = 0; c < cols.size(); ++c) {
        if (!cols[c].valid) continue;
        const double x = columnX(c);
        add(live, x, m_layout.live()[c]);
        add(reserved, x, m_layout.reserved()[c]);
    }
    m_liveLine->data()->set(live, true);
    m_reservedLine->data()->set(reserved, true);
    m_reservedFill->data()->set(reserved, true);
    if (m_doc && !m_poolLines.empty()) {
        const auto& pools = m_doc->timeline().privatePools;
        for (size_t p = 0; p < m_poolLines.size() && p < pools.size(); ++p) {
            const auto env = m_layout.binning().envelope(pools[p].reservedBytes, pools[p].reservedBefore);
            QVector<QCPGraphData> line;
            line.reserve(static_cast<qsizetype>(env.size() * 2));
            for (size_t c = 0; c < cols.size() && c < env.size(); ++c) {
                if (cols[c].valid) add(line, columnX(c), env[c]);
            }
            m_poolLines[p]->data()->set(line, true);
        }
    }
    m_bands->setLayout(&m_layout, m_doc ? &m_doc->lifetimes() : nullptr);
    const double process = maxInForce(m_processPlaced, m_layoutX0, m_layoutX1);
    double simulated = 0;  // the simulated reserved line stays in view too
    for (const model::SeriesPoint& p : m_simulatedSeries)
        if (p.entry >= 0 && p.entry < m_axis.count() && m_axis.x(p.entry) >= m_layoutX0 && m_axis.x(p.entry) <= m_layoutX1)
            simulated = std::max(simulated, static_cast<double>(p.reserved));
    const double top = std::max({static_cast<double>(m_layout.maxBytes()), process, simulated, 1024.0}) * 1.08;
    m_plot->yAxis->setRange(0, top);
}

int64_t TimelineView::entryAt(const QPoint& pos) const {
    if (m_axis.count() == 0) return -1;
    const double x = m_plot->xAxis->pixelToCoord(pos.x());
    return std::clamp<int64_t>(m_axis.entryAt(x), 0, m_axis.count() - 1);
}

int TimelineView::columnAt(const QPoint& pos) const {
    const QRect area = m_plot->axisRect()->rect();
    if (m_layout.width() == 0 || area.width() <= 0) return 0;
    return std::clamp(static_cast<int>(int64_t(pos.x() - area.left()) * m_layout.width() / area.width()), 0,
                      m_layout.width() - 1);
}

int64_t TimelineView::lifetimeAt(const QPoint& pos) const {
    const QRect area = m_plot->axisRect()->rect();
    if (!area.contains(pos) || m_layout.width() == 0) return TimelineBands::kNothing;
    const double bytes = m_plot->yAxis->pixelToCoord(pos.y());
    return m_layout.bands().hit(columnAt(pos), static_cast<int64_t>(std::floor(bytes)));
}

QString TimelineView::describeLifetime(int64_t lifetime) const {
    if (!m_doc || lifetime < 0 || static_cast<size_t>(lifetime) >= m_doc->lifetimes().size()) return {};
    const AllocationLifetime& l = m_doc->lifetimes()[static_cast<size_t>(lifetime)];
    const uint64_t bytes = m_doc->lifetimes().bytes(static_cast<size_t>(lifetime));
    const uint64_t address = m_doc->lifetimes().address(static_cast<size_t>(lifetime), m_doc->deviceData().trace);
    QString from = l.allocatedBeforeRecording() ? tr("allocated before recording") : tr("entry %1").arg(entryNumber(l.begin));
    QString to = l.end >= m_doc->entryCount() ? tr("still live at the end") : tr("freed at entry %1").arg(entryNumber(l.end));
    return tr("%1 at %2, %3 → %4").arg(formatBytes(static_cast<double>(bytes)), hexAddress(address), from, to);
}

QString TimelineView::stackHtml(model::StackId stack) const {
    const auto fr = frames::usefulFrames(m_doc->snapshot(), stack, 6);
    if (fr.empty()) return QStringLiteral("<br><i>%1</i>").arg(tr("no stack recorded"));
    QString html = QStringLiteral("<br><span style='font-family:monospace'>");
    for (model::FrameId f : fr) html += htmlEscaped(frames::label(m_doc->snapshot(), f)) + QStringLiteral("<br>");
    return html + QStringLiteral("</span>");
}

QString TimelineView::describeAt(const QPoint& pos) const {
    if (!m_doc || m_axis.count() == 0 || !m_plot->axisRect()->rect().contains(pos)) return {};
    const int64_t hit = lifetimeAt(pos);
    const int64_t entry = entryAt(pos);
    const auto& tl = m_doc->timeline();
    const auto& trace = m_doc->deviceData().trace;
    QString entryLine = tr("Entry %1 (%2): live %3, reserved %4")
                            .arg(entryNumber(entry), QString::fromLatin1(model::actionName(trace.action[entry])),
                                 formatBytes(static_cast<double>(tl.liveBytes[entry])),
                                 formatBytes(static_cast<double>(tl.reservedBytes[entry])));
    for (const auto& pool : tl.privatePools)
        entryLine += tr(", %1 reserved %2")
                         .arg(QString::fromStdString(model::poolName(pool.pool)),
                              formatBytes(static_cast<double>(pool.reservedBytes[static_cast<size_t>(entry)])));
    QString html;
    if (hit >= 0) {
        const AllocationLifetime& l = m_doc->lifetimes()[static_cast<size_t>(hit)];
        const auto i = static_cast<size_t>(hit);
        html += QStringLiteral("<b>%1</b> at %2<br>")
                    .arg(formatBytes(static_cast<double>(m_doc->lifetimes().bytes(i))),
                         hexAddress(m_doc->lifetimes().address(i, m_doc->deviceData().trace)));
        QString from = l.allocatedBeforeRecording() ? tr("allocated before recording") : tr("alloc at entry %1").arg(entryNumber(l.begin));
        QString to = l.end >= m_doc->entryCount() ? tr("still live at the end") : tr("freed at entry %1").arg(entryNumber(l.end));
        html += from + QStringLiteral(" → ") + to;
        if (!l.allocatedBeforeRecording() && l.end < m_doc->entryCount())
            html += tr(" (%1 entries)").arg(entryNumber(l.end - l.begin));
        html += stackHtml(m_doc->lifetimes().stack(i));
    } else if (TimelineBands::isGroupHit(hit)) {
        const TimelineBands& bands = m_layout.bands();
        const size_t g = TimelineBands::groupOfHit(hit);
        const int column = columnAt(pos);
        html += tr("<b>%1 allocations from one call site</b>, summed: %2 live here")
                    .arg(QLocale::system().toString(static_cast<qulonglong>(bands.groupAllocations(g))),
                         formatBytes(static_cast<double>(bands.groupBytes(column, g))));
        html += stackHtml(bands.groupStack(g));
    } else if (hit == TimelineBands::kOther) {
        html += tr("<b>Other allocations</b>: those not drawn one by one, summed");
        html += QStringLiteral("<br>");
    }
    if (!html.isEmpty() && !html.endsWith(QStringLiteral("<br>"))) html += QStringLiteral("<br>");
    if (!m_processPlaced.empty()) {
        const double x = m_plot->xAxis->pixelToCoord(pos.x());
        auto after = std::upper_bound(m_processPlaced.begin(), m_processPlaced.end(), x,
                                      [](double v, const PlacedSample& p) { return v < p.x; });
        if (after != m_processPlaced.begin())
            entryLine += tr("; nvidia-smi %1").arg(formatBytes(std::prev(after)->bytes));
    }
    html += QStringLiteral("<span style='color:#555'>%1</span>").arg(entryLine.toHtmlEscaped());
    return html;
}

void TimelineView::onMousePress(QMouseEvent* event) {
    if (!m_doc || m_axis.count() == 0) return;
    m_pressPos = event->pos();
    m_pressX = m_plot->xAxis->pixelToCoord(event->pos().x());
    m_pressRange = xRange();
    if (event->button() == Qt::LeftButton) m_drag = Drag::Pending;
    else if (event->button() == Qt::RightButton || event->button() == Qt::MiddleButton) m_drag = Drag::Pan;
}

void TimelineView::onMouseMove(QMouseEvent* event) {
    if (!m_doc || m_axis.count() == 0) return;
    if (m_drag == Drag::Pending && std::abs(event->pos().x() - m_pressPos.x()) >= kDragThreshold) m_drag = Drag::Select;
    if (m_drag == Drag::Select) {
        m_overlay->setDrag(std::make_pair(m_pressX, m_plot->xAxis->pixelToCoord(event->pos().x())));
        scheduleReplot();
        return;
    }
    if (m_drag == Drag::Pan) {
        const QRect area = m_plot->axisRect()->rect();
        const double perPixel = (m_pressRange.second - m_pressRange.first) / std::max(1, area.width());
        const double dx = (event->pos().x() - m_pressPos.x()) * perPixel;
        setXRange(m_pressRange.first - dx, m_pressRange.second - dx);
        return;
    }
    if (m_drag != Drag::None) return;
    const int64_t hit = lifetimeAt(event->pos());
    const int64_t hovered = hit >= 0 ? hit : -1;
    if (hovered != m_hovered) {
        m_hovered = hovered;
        m_bands->setHoveredLifetime(hovered);
        scheduleReplot();
    }
    const QString text = describeAt(event->pos());
    if (text.isEmpty()) QToolTip::hideText();
    else QToolTip::showText(event->globalPosition().toPoint(), text, m_plot);
}

void TimelineView::onMouseRelease(QMouseEvent* event) {
    const Drag drag = m_drag;
    m_drag = Drag::None;
    if (!m_doc || m_axis.count() == 0) return;
    if (drag == Drag::Select) {
        m_overlay->setDrag(std::nullopt);
        const double x1 = m_plot->xAxis->pixelToCoord(event->pos().x());
        const int64_t a = std::clamp<int64_t>(m_axis.entryAt(std::min(m_pressX, x1)), 0, m_axis.count() - 1);
        const int64_t b = std::clamp<int64_t>(m_axis.entryAt(std::max(m_pressX, x1)), 0, m_axis.count() - 1);
        m_doc->setSelection(a, b);
        scheduleReplot();
    } else if (drag == Drag::Pending && event->button() == Qt::LeftButton) {
        const int64_t hit = lifetimeAt(event->pos());
        m_doc->setCurrentEvent(entryAt(event->pos()));
        if (hit >= 0) {
            m_doc->selectAllocation(m_doc->lifetimes().stack(static_cast<size_t>(hit)), describeLifetime(hit));
        } else if (TimelineBands::isGroupHit(hit)) {
            // a band of many allocations: its call site (the stack view shows it)
            const TimelineBands& bands = m_layout.bands();
            const size_t g = TimelineBands::groupOfHit(hit);
            m_doc->selectAllocation(bands.groupStack(g), tr("%1 allocations from one call site")
                                                             .arg(QLocale::system().toString(
                                                                 static_cast<qulonglong>(bands.groupAllocations(g)))));
        }
    } else if (drag == Drag::Pan && event->button() == Qt::RightButton &&
               (event->pos() - m_pressPos).manhattanLength() < kDragThreshold) {
        showContextMenu(event->globalPosition().toPoint());  // a right click, not a drag
    }
}

void TimelineView::showContextMenu(const QPoint& globalPos) {
    QMenu menu(this);
    const bool selected = m_doc && m_doc->selection().has_value();
    menu.addAction(tr("Zoom to Selection"), this, &TimelineView::zoomToSelection)->setEnabled(selected);
    menu.addAction(tr("Show Everything"), this, &TimelineView::fit);
    menu.addSeparator();
    menu.addAction(tr("Back to Previous Selection"), m_doc.data(), &SnapshotDocument::back)->setEnabled(m_doc && m_doc->canGoBack());
    menu.addAction(tr("Clear Selection"), m_doc.data(), &SnapshotDocument::resetSelection)->setEnabled(selected);
    menu.exec(globalPos);
}

void TimelineView::onWheel(QWheelEvent* event) {
    if (m_axis.count() == 0) return;
    const double steps = event->angleDelta().y() / 120.0 + event->angleDelta().x() / 120.0;
    if (steps == 0) return;
    const auto [x0, x1] = xRange();
    if (event->modifiers() & Qt::ShiftModifier) {
        const double dx = -(x1 - x0) * 0.1 * steps;
        setXRange(x0 + dx, x1 + dx);
    } else {
        const double at = m_plot->xAxis->pixelToCoord(event->position().x());
        const double f = std::pow(0.8, steps);
        setXRange(at - (at - x0) * f, at + (x1 - at) * f);
    }
    event->accept();
}

bool TimelineView::eventFilter(QObject* watched, QEvent* event) {
    if (watched == m_plot && event->type() == QEvent::Leave && m_hovered != -1) {
        m_hovered = -1;
        m_bands->setHoveredLifetime(-1);
        scheduleReplot();
    }
    // a wider or narrower plot may draw more or fewer bands (kMaxBandsPerPixel): choose again once it rests
    if (watched == m_plot && event->type() == QEvent::Resize && m_doc) m_chooseTimer->start();
    return QWidget::eventFilter(watched, event);
}

} // namespace memlens::views
