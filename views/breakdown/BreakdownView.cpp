#include "breakdown/BreakdownView.h"
#include "common/ByteText.h"

#include "common/PlaceholderPages.h"

#include "breakdown/AllocatorSettingsPanel.h"
#include "breakdown/BreakdownBar.h"
#include "document/SnapshotDocument.h"
#include "common/ViewColors.h"

#include <QGridLayout>
#include <QLabel>
#include <QPixmap>
#include <QScrollArea>
#include <QVBoxLayout>

#include <algorithm>

namespace memlens::views {

namespace {


QPixmap swatch(const QColor& c) {
    QPixmap pm(14, 14);
    pm.fill(c);
    return pm;
}

QString percent(uint64_t part, uint64_t total) {
    if (total == 0) return QStringLiteral("\u2013");
    const double p = 100.0 * static_cast<double>(part) / static_cast<double>(total);
    if (part > 0 && p < 0.1) return QStringLiteral("<0.1%");
    if (part < total && p >= 99.5) return QString::number(std::min(p, 99.9), 'f', 1) + QLatin1Char('%');  // not "100%"
    return QString::number(p, 'f', p < 10 ? 1 : 0) + QLatin1Char('%');
}

} // namespace

BreakdownView::BreakdownView(QWidget* parent) : QWidget(parent) {
    auto* outer = new QVBoxLayout(this);
    outer->setContentsMargins(0, 0, 0, 0);
    m_pages = new PlaceholderPages(this);
    outer->addWidget(m_pages);

    auto* scroll = new QScrollArea(m_pages);
    scroll->setWidgetResizable(true);
    scroll->setFrameShape(QFrame::NoFrame);
    auto* page = new QWidget;
    auto* v = new QVBoxLayout(page);
    v->setContentsMargins(10, 10, 10, 10);
    v->setSpacing(8);

    m_headline = new QLabel(page);
    m_headline->setTextFormat(Qt::RichText);
    m_headline->setWordWrap(true);
    v->addWidget(m_headline);

    m_bar = new BreakdownBar(page);
    v->addWidget(m_bar);

    m_gridHost = new QWidget(page);
    m_grid = new QGridLayout(m_gridHost);
    m_grid->setContentsMargins(0, 4, 0, 0);
    m_grid->setHorizontalSpacing(10);
    m_grid->setVerticalSpacing(2);
    m_grid->setColumnStretch(4, 1);  // name, bytes and share stay together on the left
    v->addWidget(m_gridHost);

    m_categories = new QLabel(page);
    m_categories->setObjectName(QStringLiteral("breakdownCategories"));
    m_categories->setWordWrap(true);
    m_categories->setTextFormat(Qt::RichText);
    v->addWidget(m_categories);

    m_pools = new QLabel(page);
    m_pools->setObjectName(QStringLiteral("breakdownPools"));
    m_pools->setWordWrap(true);
    m_pools->setTextFormat(Qt::RichText);
    v->addWidget(m_pools);

    m_note = new QLabel(page);
    m_note->setWordWrap(true);
    m_note->setTextFormat(Qt::RichText);
    m_note->setContentsMargins(8, 6, 8, 6);
    m_note->setStyleSheet(QStringLiteral("QLabel { background: palette(alternate-base); border-radius: 4px; }"));
    v->addWidget(m_note);
    m_settings = new AllocatorSettingsPanel(page);
    v->addWidget(m_settings);
    v->addStretch(1);

    scroll->setWidget(page);
    m_pages->setContent(scroll);
    setDocument(nullptr);
}

void BreakdownView::setDocument(SnapshotDocument* doc) {
    if (m_doc) disconnect(m_doc, nullptr, this, nullptr);
    m_doc = doc;
    if (m_doc) {
        connect(m_doc, &SnapshotDocument::currentEventChanged, this, &BreakdownView::refresh);
        connect(m_doc, &SnapshotDocument::deviceChanged, this, &BreakdownView::refresh);
        connect(m_doc, &SnapshotDocument::stateReady, this, &BreakdownView::refresh);
        connect(m_doc, &QObject::destroyed, this, [this] { setDocument(nullptr); });
    }
    refresh();
}

void BreakdownView::setProcessFigures(const std::optional<model::ProcessFigures>& figures) {
    m_process = figures;
    refresh();
}

void BreakdownView::setCategoryTags(model::CategoryTags tags) {
    m_tags = std::move(tags);
    refresh();
}

QString BreakdownView::headlineText() const { return m_headline->text(); }
QString BreakdownView::categoryText() const { return m_categories->text(); }
QString BreakdownView::poolsText() const { return m_pools->isHidden() ? QString() : m_pools->text(); }
QString BreakdownView::noteText() const { return m_note->isHidden() ? QString() : m_note->text(); }
bool BreakdownView::isShowingPlaceholder() const { return m_pages->isShowingPlaceholder(); }

QStringList BreakdownView::rowTexts() const {
    QStringList out;
    for (const Row& r : m_rows)
        if (!r.label->isHidden()) out << r.label->text() + QLatin1Char('|') + r.bytes->text() + QLatin1Char('|') + r.explanation->text();
    return out;
}

// Each part takes two grid rows: swatch, name, bytes and share; then its sentence under the name.
void BreakdownView::ensureRows(int count) {
    while (m_rows.size() < count) {
        const int i = static_cast<int>(m_rows.size()) * 2;
        Row r{new QLabel(m_gridHost), new QLabel(m_gridHost), new QLabel(m_gridHost), new QLabel(m_gridHost),
              new QLabel(m_gridHost)};
        QFont bold = r.label->font();
        bold.setBold(true);
        r.label->setFont(bold);
        r.bytes->setAlignment(Qt::AlignRight | Qt::AlignVCenter);
        r.bytes->setFont(bold);
        r.percent->setAlignment(Qt::AlignRight | Qt::AlignVCenter);
        r.percent->setMinimumWidth(r.percent->fontMetrics().horizontalAdvance(QStringLiteral("<0.1%")));
        r.percent->setEnabled(false);
        r.explanation->setWordWrap(true);
        r.explanation->setTextFormat(Qt::PlainText);
        r.explanation->setTextInteractionFlags(Qt::TextSelectableByMouse);
        r.explanation->setContentsMargins(0, 0, 0, 4);
        QPalette pal = r.explanation->palette();
        pal.setColor(QPalette::WindowText, QColor(0x50, 0x50, 0x50));
        r.explanation->setPalette(pal);
        m_grid->addWidget(r.swatch, i, 0, Qt::AlignVCenter);
        m_grid->addWidget(r.label, i, 1);
        m_grid->addWidget(r.bytes, i, 2);
        m_grid->addWidget(r.percent, i, 3);
        m_grid->addWidget(r.explanation, i + 1, 1, 1, 4);
        m_rows.push_back(r);
    }
}

void BreakdownView::refresh() {
    if (!m_doc) {
        m_breakdown = {};
        m_bar->clear();
        m_settings->setSnapshot(nullptr, 0);
        m_pages->showPlaceholder(tr("No snapshot open.\nThis view explains where the reserved GPU memory goes, and why "
                                    "nvidia-smi shows more than PyTorch's allocated memory."));
        return;
    }
    if (m_doc->isStatePending()) {
        m_breakdown = {};
        m_bar->clear();
        m_pages->showPlaceholder(SnapshotDocument::statePendingText());
        return;
    }
    m_pages->showContent();
    const model::DeviceState& st = m_doc->currentState();
    m_breakdown = model::computeBreakdown(st, m_process);
    m_bar->setBreakdown(m_breakdown);

    const uint64_t live = m_breakdown.bytes(model::BreakdownPart::LiveTensors);
    const int64_t at = m_doc->currentEvent();
    const QString when = at < 0 ? tr("before the first entry") : tr("after entry #%1").arg(at);
    QString headline = tr("<b>Why nvidia-smi shows more</b> \u2014 %1, %2<br>")
                           .arg(m_doc->device() == model::kHostDevice ? tr("pinned host memory")
                                                                       : tr("device %1").arg(m_doc->device()))
                           .arg(when);
    if (m_breakdown.reservedBytes == 0) {
        headline += tr("PyTorch's allocator holds no memory at this point.");
    } else {
        headline += tr("PyTorch has reserved <b>%1</b> from the driver; live tensors use <b>%2</b> of it (%3).")
                        .arg(formatBytes(m_breakdown.reservedBytes), formatBytes(live), percent(live, m_breakdown.reservedBytes));
        if (m_breakdown.hasProcessFigures)
            headline += tr(" The process holds <b>%1</b> in all.").arg(formatBytes(m_breakdown.totalBytes));
    }
    m_headline->setText(headline);

    const int n = static_cast<int>(m_breakdown.parts.size());
    ensureRows(n);
    for (int i = 0; i < m_rows.size(); ++i) {
        const Row& r = m_rows[i];
        const bool shown = i < n;
        for (QLabel* l : {r.swatch, r.label, r.bytes, r.percent, r.explanation}) l->setVisible(shown);
        if (!shown) continue;
        const auto& part = m_breakdown.parts[static_cast<size_t>(i)];
        r.swatch->setPixmap(swatch(colors::breakdownPart(part.part)));
        r.label->setText(QString::fromStdString(part.label));
        r.bytes->setText(formatBytes(part.bytes));
        r.percent->setText(percent(part.bytes, m_breakdown.totalBytes));
        r.explanation->setText(QString::fromStdString(part.explanation));
        r.label->setEnabled(part.bytes > 0);
        r.bytes->setEnabled(part.bytes > 0);
    }

    // the live tensors by what they are for, estimated from the stacks that allocated them
    if (m_rolesOf != &m_doc->snapshot()) {
        m_roles = model::stackRoles(m_doc->snapshot());
        m_rolesOf = &m_doc->snapshot();
    }
    const model::CategoryBytes cats = model::categoriesAt(st, m_roles, m_tags);
    QStringList parts;
    for (int c = 0; c < model::kMemoryCategoryCount; ++c)
        if (cats.bytes[static_cast<size_t>(c)] > 0)
            parts << QStringLiteral("%1 <b>%2</b>")
                         .arg(QString::fromLatin1(model::memoryCategoryLabel(static_cast<model::MemoryCategory>(c))),
                              formatBytes(static_cast<double>(cats.bytes[static_cast<size_t>(c)])));
    const QString how = !cats.estimated ? tr("tagged by the agent")
                        : m_tags.empty() ? tr("estimated from the allocation stacks")
                                         : tr("tagged by the agent where it could, the rest estimated from the stacks");
    m_categories->setText(parts.isEmpty() ? QString()
                                          : tr("<b>Live tensors by category</b> (%1): ").arg(how) + parts.join(QStringLiteral(" \u00b7 ")));
    m_categories->setVisible(!parts.isEmpty());

    // private pools apart: inside the parts above, but their cache serves only their own pool
    QStringList pools;
    for (const auto& p : m_breakdown.privatePools)
        pools << tr("%1: reserved <b>%2</b>, live %3, cached free %4")
                     .arg(QString::fromStdString(model::poolName(p.pool)), formatBytes(p.reservedBytes),
                          formatBytes(p.liveBytes), formatBytes(p.freeBytes));
    m_pools->setText(pools.isEmpty()
                         ? QString()
                         : tr("<b>Private pools</b> (CUDA graphs, torch.cuda.MemPool; counted in the parts above): ") +
                               pools.join(QStringLiteral(" \u00b7 ")) +
                               tr(". A private pool's free blocks serve only that pool, and empty_cache() cannot release "
                                  "them while the pool (or the graph that owns it) is alive."));
    m_pools->setVisible(!pools.isEmpty());
    m_settings->setSnapshot(&m_doc->snapshot(), m_doc->device());

    QString note;
    if (!m_breakdown.hasProcessFigures)
        note = tr("<b>Not in a snapshot:</b> nvidia-smi also counts the CUDA context (typically 300\u2013600 MiB per "
                  "device and process) and memory that NCCL, cuBLAS/cuDNN handles and other libraries take directly "
                  "from the driver. A snapshot records only PyTorch's allocator; a captured session measures the "
                  "process as well and brings these parts.");
    if (!m_breakdown.note.empty()) note += (note.isEmpty() ? QString() : QStringLiteral("<br>")) + QString::fromStdString(m_breakdown.note).toHtmlEscaped();
    m_note->setText(note);
    m_note->setVisible(!note.isEmpty());
}

} // namespace memlens::views
