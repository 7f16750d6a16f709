#include "blockmap/BlockMapView.h"
#include "common/ByteText.h"

#include "common/PlaceholderPages.h"

#include "blockmap/BlockDescription.h"
#include "blockmap/BlockMapCanvas.h"
#include "common/ColorLegend.h"
#include "document/SnapshotDocument.h"
#include "memlens/model/MemoryBreakdown.h"
#include "common/ViewColors.h"

#include <QEvent>
#include <QHBoxLayout>
#include <QLabel>
#include <QScrollArea>
#include <QScrollBar>
#include <QToolButton>
#include <QVBoxLayout>

#include <algorithm>

namespace memlens::views {

namespace {


QString entryName(const SnapshotDocument& doc, int64_t i) {
    if (i < 0) return QStringLiteral("before the first entry");
    const auto& t = doc.deviceData().trace;
    if (static_cast<size_t>(i) >= t.rows()) return {};
    QString action = t.action[i] == model::Action::Other ? QString::fromUtf8(doc.snapshot().str(t.actionName[i]))
                                                         : QString::fromLatin1(model::actionName(t.action[i]));
    return QStringLiteral("after entry #%1 (%2)").arg(i).arg(action);
}

} // namespace

BlockMapView::BlockMapView(QWidget* parent) : QWidget(parent) {
    auto* outer = new QVBoxLayout(this);
    outer->setContentsMargins(0, 0, 0, 0);
    m_pages = new PlaceholderPages(this);
    outer->addWidget(m_pages);

    auto* page = new QWidget(m_pages);
    auto* v = new QVBoxLayout(page);
    v->setContentsMargins(6, 6, 6, 6);
    v->setSpacing(6);

    m_verdict = new QLabel(page);
    m_verdict->setWordWrap(true);
    m_verdict->setTextFormat(Qt::RichText);
    m_verdict->setContentsMargins(10, 8, 10, 8);
    m_verdict->setStyleSheet(QStringLiteral("QLabel { background: %1; color: %2; border: 1px solid %2; border-radius: 4px; }")
                                 .arg(colors::oomBackground().name(), colors::oomText().name()));
    m_verdict->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_verdict->hide();
    v->addWidget(m_verdict);

    auto* totalsRow = new QHBoxLayout;
    m_totals = new QLabel(page);
    m_totals->setTextFormat(Qt::RichText);
    m_totals->setWordWrap(true);
    m_totals->setTextInteractionFlags(Qt::TextSelectableByMouse | Qt::LinksAccessibleByMouse);
    connect(m_totals, &QLabel::linkActivated, this, [this](const QString& link) {
        if (m_doc && link.startsWith(QLatin1String("entry:"))) m_doc->setCurrentEvent(link.mid(6).toLongLong());
    });
    totalsRow->addWidget(m_totals, 1);
    m_scale = new QLabel(page);
    m_scale->setEnabled(false);
    totalsRow->addWidget(m_scale, 0, Qt::AlignTop);
    m_fit = new QToolButton(page);
    m_fit->setText(tr("Fit"));
    m_fit->setToolTip(tr("Show every segment at once (Ctrl+wheel over the map zooms in)"));
    m_fit->setEnabled(false);
    totalsRow->addWidget(m_fit, 0, Qt::AlignTop);
    v->addLayout(totalsRow);

    m_scroll = new QScrollArea(page);
    m_scroll->setWidgetResizable(true);
    m_scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    m_scroll->setFrameShape(QFrame::StyledPanel);
    m_canvas = new BlockMapCanvas;
    m_canvas->setStatusTip(tr("Hover a block for its details; click to select its allocation; Ctrl+wheel zooms"));
    m_scroll->setWidget(m_canvas);
    m_scroll->viewport()->installEventFilter(this);
    v->addWidget(m_scroll, 1);

    m_legend = new ColorLegend(page);
    using S = ColorLegend::Swatch;
    using K = model::StateBlockKind;
    m_legend->setEntries({
        {colors::blockKind(K::Allocated), tr("allocated"), S::Fill, tr("Blocks holding live tensors")},
        {colors::blockKind(K::BeforeRecording), tr("allocated before recording"), S::Hatched,
         tr("Live blocks whose alloc is not in the trace; their size is estimated (hatched)")},
        {colors::blockKind(K::PendingFree), tr("pending free"), S::Fill,
         tr("Freed by the program, still in use on another stream")},
        {colors::blockKind(K::Free), tr("free (cached)"), S::Fill, tr("Free blocks the allocator keeps cached")},
        {colors::blockKind(K::Allocated), tr("size estimated"), S::Hatched,
         tr("Block rebuilt from the trace: its size is the request rounded up to 512 bytes")},
        {colors::largestFreeOutline(), tr("largest free block"), S::Outline, {}},
        {colors::regularSegment(), tr("segment"), S::Stripe, tr("A cudaMalloc segment")},
        {colors::expandableSegment(), tr("expandable segment"), S::Stripe,
         tr("A mapped range of an expandable segment (expandable_segments:True)")},
        {colors::privatePoolSegment(), tr("private pool"), S::Stripe,
         tr("A segment of a private pool (a CUDA graph's, or a torch.cuda.MemPool): its free blocks serve only "
            "that pool. Private pools come after the default pool, grouped by pool")},
    });
    v->addWidget(m_legend);
    m_pages->setContent(page);

    connect(m_canvas, &BlockMapCanvas::blockClicked, this, &BlockMapView::blockClicked);
    connect(m_canvas, &BlockMapCanvas::zoomChanged, this, [this](double z) {
        m_fit->setEnabled(z > 1.0);
        updateTotals();
    });
    connect(m_canvas, &BlockMapCanvas::layoutChanged, this, &BlockMapView::updateScale);
    connect(m_fit, &QToolButton::clicked, this, [this] { m_canvas->setZoom(1.0); });

    setDocument(nullptr);
}

void BlockMapView::setDocument(SnapshotDocument* doc) {
    if (m_doc) disconnect(m_doc, nullptr, this, nullptr);
    m_doc = doc;
    if (m_doc) {
        connect(m_doc, &SnapshotDocument::deviceChanged, this, &BlockMapView::deviceChanged);
        connect(m_doc, &SnapshotDocument::currentEventChanged, this, &BlockMapView::refresh);
        connect(m_doc, &SnapshotDocument::stateReady, this, &BlockMapView::refresh);
        connect(m_doc, &SnapshotDocument::historiesReady, this, &BlockMapView::updateVerdict);
        connect(m_doc, &SnapshotDocument::allocationSelected, this, [this] {
            if (!m_selecting) m_canvas->setSelectedAddress(m_doc->selectedAddress());  // e.g. a saved tensor's block
        });
        connect(m_doc, &SnapshotDocument::markedAddressesChanged, this, [this] {
            m_canvas->setMarkedAddresses(m_doc->markedOnDevice());
            updateTotals();
        });
        connect(m_doc, &QObject::destroyed, this, [this] { setDocument(nullptr); });
    }
    deviceChanged();
}

void BlockMapView::deviceChanged() {
    m_ooms.clear();
    m_canvas->setSelectedAddress(std::nullopt);
    if (m_doc) {
        const auto& t = m_doc->deviceData().trace;
        for (size_t i = 0; i < t.rows(); ++i)
            if (t.action[i] == model::Action::Oom) m_ooms.push_back(static_cast<int64_t>(i));
    }
    refresh();
}

bool BlockMapView::isShowingPlaceholder() const { return m_pages->isShowingPlaceholder(); }
QString BlockMapView::totalsText() const { return m_totals->text(); }
QString BlockMapView::verdictText() const { return m_verdict->isHidden() ? QString() : m_verdict->text(); }

void BlockMapView::showPlaceholder(const QString& text) {
    m_pages->showPlaceholder(text);
    m_canvas->setState(nullptr, nullptr);
    m_verdict->hide();
}

void BlockMapView::refresh() {
    if (!m_doc) {
        showPlaceholder(tr("No snapshot open.\nThe block map shows every segment of the allocator and its blocks."));
        return;
    }
    const bool simulated = isShowingSimulated();
    if (!simulated && m_doc->isStatePending()) {
        showPlaceholder(SnapshotDocument::statePendingText());
        return;
    }
    const std::shared_ptr<const model::DeviceState> current = simulated ? nullptr : m_doc->currentStateShared();
    const model::DeviceState& st = simulated ? *m_simulated : *current;
    if (st.segments.empty()) {
        showPlaceholder((simulated ? tr("Nothing reserved in the simulation (%1) %2.").arg(m_simulatedLabel)
                                   : tr("Nothing reserved on %1 %2.").arg(QString::fromStdString(model::deviceLabel(m_doc->device()))))
                            .arg(entryName(*m_doc, m_doc->currentEvent())));
        return;
    }
    m_pages->showContent();
    m_canvas->setMarkedAddresses(simulated ? std::vector<uint64_t>{} : m_doc->markedOnDevice());
    m_canvas->setState(simulated ? m_simulated : groupedByPool(current), m_doc->loaded().snapshot);
    updateVerdict();
    updateTotals();
}

// Where the segments are grouped already (one pool: the common case) the state is shared, not a
// copy of its hundreds of thousands of blocks.
std::shared_ptr<const model::DeviceState> BlockMapView::groupedByPool(std::shared_ptr<const model::DeviceState> st) {
    const auto byPool = [](const model::StateSegment& a, const model::StateSegment& b) {
        if (a.pool.isDefault() != b.pool.isDefault()) return a.pool.isDefault();
        return a.pool < b.pool;
    };
    if (std::is_sorted(st->segments.begin(), st->segments.end(), byPool)) return st;
    auto copy = std::make_shared<model::DeviceState>(*st);
    std::stable_sort(copy->segments.begin(), copy->segments.end(), byPool);
    return copy;
}

void BlockMapView::setSimulatedState(std::shared_ptr<const model::DeviceState> state, const QString& label) {
    const bool nothingShownChanges = !state && !m_simulated;  // what-if clearing what it never set
    m_simulated = std::move(state);
    m_simulatedLabel = label;
    if (!nothingShownChanges) refresh();
}

bool BlockMapView::isShowingSimulated() const {
    return m_doc && m_simulated && m_simulated->device == m_doc->device() && m_simulated->at == m_doc->currentEvent();
}

void BlockMapView::updateVerdict() {
    m_verdictValue.reset();
    // the verdict rewinds to the entry before the oom: once the histories are built
    if (m_doc && !isShowingSimulated() && !m_doc->isRewinding())
        m_verdictValue = model::oomVerdictAt(m_doc->deviceData(), m_doc->history(), m_doc->currentEvent());
    if (!m_verdictValue) {
        m_verdict->hide();
        return;
    }
    const auto& v = *m_verdictValue;
    QString sentence = QString::fromStdString(v.sentence);
    if (!sentence.isEmpty()) sentence[0] = sentence[0].toUpper();
    m_verdict->setText(QStringLiteral("<b style='font-size:large'>Out of memory at entry #%1</b><br>%2.<br>%3")
                           .arg(v.entry)
                           .arg(sentence.toHtmlEscaped(), QString::fromStdString(v.advice).toHtmlEscaped()));
    m_verdict->show();
}

void BlockMapView::updateTotals() {
    if (!m_doc || !m_canvas->state()) {
        m_totals->clear();
        m_scale->clear();
        return;
    }
    const model::DeviceState& st = *m_canvas->state();
    const auto b = [](uint64_t v) { return QStringLiteral("<b>") + formatBytes(v) + QStringLiteral("</b>"); };
    QString text = QStringLiteral("%1, %2: reserved %3 \u00b7 allocated %4 \u00b7 free %5 \u00b7 largest free block %6"
                                  " \u00b7 fragmentation <b>%7%</b> \u00b7 %8 segments")
                       .arg(m_doc->device() == model::kHostDevice ? tr("Pinned host memory")
                                                                   : tr("Device %1").arg(m_doc->device()))
                       .arg(entryName(*m_doc, m_doc->currentEvent()), b(st.reservedBytes), b(st.allocatedBytes),
                            b(st.freeBytes), b(st.largestFreeBlock))
                       .arg(QString::number(st.fragmentation() * 100.0, 'f', 0))
                       .arg(st.segments.size());
    if (st.pendingFreeBytes) text += QStringLiteral(" \u00b7 pending free %1").arg(b(st.pendingFreeBytes));
    // each private pool apart: its cache serves only that pool
    for (const auto& p : model::privatePoolShares(st))
        text += QStringLiteral(" \u00b7 %1: reserved %2, allocated %3")
                    .arg(QString::fromStdString(model::poolName(p.pool)), b(p.reservedBytes), b(p.allocatedBytes));
    if (isShowingSimulated())
        text = tr("<span style='color:#9467bd'><b>Simulated</b></span> (%1): ").arg(m_simulatedLabel.toHtmlEscaped()) + text;
    text += markedSentence(st);
    // point at the oom entries when the current one is not one of them
    if (!m_verdictValue && !m_ooms.empty()) {
        text += QStringLiteral(" \u00b7 <span style='color:%1'>\u26a0</span> ").arg(colors::oomText().name());
        QStringList links;
        for (size_t i = 0; i < m_ooms.size() && i < 3; ++i)
            links << QStringLiteral("<a href='entry:%1'>OOM at #%1</a>").arg(m_ooms[i]);
        if (m_ooms.size() > 3) links << QStringLiteral("\u2026");
        text += links.join(QStringLiteral(", "));
    }
    m_totals->setText(text);
}

// The scale is the layout's: set when the canvas lays the map out (after a new state, size or zoom).
void BlockMapView::updateScale() {
    if (!m_doc || !m_canvas->state()) {
        m_scale->clear();
        return;
    }
    const double bpp = m_canvas->layout().bytesPerPixel();
    m_scale->setText(QStringLiteral("1 px \u2248 %1").arg(formatBytes(static_cast<uint64_t>(std::max(1.0, bpp)))));
}

QString BlockMapView::markedSentence(const model::DeviceState& st) const {
    const std::vector<uint64_t> marked = m_doc->markedOnDevice();
    if (marked.empty()) return {};
    const QString holder = m_doc->markedAddresses().holder.toHtmlEscaped();
    const auto& blocks = m_canvas->markedBlocks();
    if (blocks.empty())
        return tr("<br>None of the CUDA storages %1 keeps alive (%2) is in an allocated block at this entry")
            .arg(holder)
            .arg(marked.size());
    uint64_t total = 0;
    for (const auto& [segment, block] : blocks) total += st.segments[segment].blocks[block].size;
    return tr("<br><span style='color:%1'>&#9645;</span> %2 %3, <b>%4</b>, hold what %5 keeps alive")
        .arg(colors::markedOutline().name())
        .arg(blocks.size())
        .arg(blocks.size() == 1 ? tr("block") : tr("blocks"), formatBytes(total), holder);
}

void BlockMapView::blockClicked(uint32_t segment, uint32_t block) {
    const model::DeviceState* st = m_canvas->state();
    if (!m_doc || !st || segment >= st->segments.size() || block >= st->segments[segment].blocks.size()) return;
    const model::StateBlock b = st->segments[segment].blocks[block];
    m_canvas->setSelectedAddress(b.address);
    if (b.kind == model::StateBlockKind::Free) return;
    m_selecting = true;
    m_doc->selectAllocation(b.stack, blockSummary(b), b.address);
    m_selecting = false;
    if (b.allocIndex >= 0) m_doc->setCurrentEvent(b.allocIndex);
}

bool BlockMapView::eventFilter(QObject* watched, QEvent* event) {
    if (watched == m_scroll->viewport() && event->type() == QEvent::Resize)
        m_canvas->setFitHeight(m_scroll->viewport()->height());
    return QWidget::eventFilter(watched, event);
}

} // namespace memlens::views
