#include "graphs/RetainedGraphsView.h"
#include "common/ByteText.h"

#include "common/PlaceholderPages.h"

#include "document/GraphScansDocument.h"
#include "graphs/RetainedGraphsModel.h"

#include <QHBoxLayout>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QLabel>
#include <QSlider>
#include <QSortFilterProxyModel>
#include <QToolButton>
#include <QTreeView>
#include <QVBoxLayout>

#include <set>

namespace memlens::views {

namespace {
} // namespace

RetainedGraphsView::RetainedGraphsView(QWidget* parent) : QWidget(parent) {
    auto* outer = new QVBoxLayout(this);
    outer->setContentsMargins(0, 0, 0, 0);
    m_pages = new PlaceholderPages(this);
    outer->addWidget(m_pages);

    auto* page = new QWidget(m_pages);
    auto* v = new QVBoxLayout(page);
    v->setContentsMargins(6, 6, 6, 6);
    v->setSpacing(4);

    auto* stepRow = new QHBoxLayout;
    stepRow->setSpacing(4);
    m_previous = new QToolButton(page);
    m_previous->setText(QStringLiteral("\u25c0"));
    m_previous->setToolTip(tr("The previous scan"));
    m_previous->setAutoRaise(true);
    m_next = new QToolButton(page);
    m_next->setText(QStringLiteral("\u25b6"));
    m_next->setToolTip(tr("The next scan"));
    m_next->setAutoRaise(true);
    m_slider = new QSlider(Qt::Horizontal, page);
    m_slider->setObjectName(QStringLiteral("scanSlider"));
    m_slider->setPageStep(1);
    m_slider->setTickPosition(QSlider::TicksBelow);
    m_slider->setToolTip(tr("Step through the scans: roots appear, grow and go away"));
    m_iteration = new QLabel(page);
    m_iteration->setMinimumWidth(m_iteration->fontMetrics().horizontalAdvance(QStringLiteral("Iteration 00000 (train) · scan 000 of 000")));
    stepRow->addWidget(m_iteration);
    stepRow->addWidget(m_previous);
    stepRow->addWidget(m_slider, 1);
    stepRow->addWidget(m_next);
    v->addLayout(stepRow);

    m_summary = new QLabel(page);
    m_summary->setTextFormat(Qt::RichText);
    m_summary->setWordWrap(true);
    m_summary->setTextInteractionFlags(Qt::TextSelectableByMouse);
    v->addWidget(m_summary);

    m_model = new RetainedGraphsModel(this);
    m_proxy = new QSortFilterProxyModel(this);
    m_proxy->setSourceModel(m_model);
    m_proxy->setSortRole(RetainedGraphsModel::SortRole);
    m_tree = new QTreeView(page);
    m_tree->setModel(m_proxy);
    m_tree->setSortingEnabled(true);
    m_tree->sortByColumn(RetainedGraphsModel::RetainedColumn, Qt::DescendingOrder);
    m_tree->setUniformRowHeights(true);
    m_tree->setAlternatingRowColors(true);
    m_tree->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_tree->setSelectionMode(QAbstractItemView::SingleSelection);
    m_tree->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_tree->header()->setStretchLastSection(true);
    m_tree->header()->setSectionResizeMode(RetainedGraphsModel::RootColumn, QHeaderView::Interactive);
    m_tree->setColumnWidth(RetainedGraphsModel::RootColumn, 260);
    m_tree->setColumnWidth(RetainedGraphsModel::GraphsColumn, 70);
    m_tree->setColumnWidth(RetainedGraphsModel::RetainedColumn, 80);
    m_tree->setColumnWidth(RetainedGraphsModel::GrowthColumn, 300);
    m_tree->setColumnWidth(RetainedGraphsModel::SavedColumn, 150);
    v->addWidget(m_tree, 1);
    m_pages->setContent(page);

    connect(m_slider, &QSlider::valueChanged, this, [this](int value) {
        if (!m_updating && m_scans) m_scans->setCurrentScan(value);
    });
    connect(m_previous, &QToolButton::clicked, this, [this] {
        if (m_scans) m_scans->previousScan();
    });
    connect(m_next, &QToolButton::clicked, this, [this] {
        if (m_scans) m_scans->nextScan();
    });
    connect(m_tree->selectionModel(), &QItemSelectionModel::currentRowChanged, this, &RetainedGraphsView::rowSelected);

    setGraphScans(nullptr);
}

void RetainedGraphsView::setDocument(SnapshotDocument*) {}

void RetainedGraphsView::setGraphScans(GraphScansDocument* scans) {
    if (m_scans) disconnect(m_scans, nullptr, this, nullptr);
    m_scans = scans;
    if (m_scans) {
        connect(m_scans, &GraphScansDocument::scansChanged, this, &RetainedGraphsView::reload);
        connect(m_scans, &GraphScansDocument::currentScanChanged, this, &RetainedGraphsView::scanChanged);
        connect(m_scans, &GraphScansDocument::graphSelected, this, &RetainedGraphsView::selectFromDocument);
        connect(m_scans, &QObject::destroyed, this, [this] { setGraphScans(nullptr); });
    }
    reload();
}

QString RetainedGraphsView::summaryText() const { return m_summary->text(); }
QString RetainedGraphsView::placeholderText() const { return m_pages->placeholderText(); }

void RetainedGraphsView::reload() {
    if (!m_scans) {
        m_model->setScans(nullptr, -1);
        m_pages->showPlaceholder(tr("No session open.\nOpen a .memlens session recorded with `memlens-cli record`: the "
                                    "agent scans for autograd graphs that something keeps alive."));
        return;
    }
    if (m_scans->scanCount() == 0) {
        m_model->setScans(nullptr, -1);
        m_pages->showPlaceholder(tr("No graph scans in this session.\nThe agent scans at the first 10 iterations, then at "
                                    "every 10th, at exit and on request (SIGUSR1 to the recorder); "
                                    "`{\"graph_scans\": false}` turns them off."));
        return;
    }
    m_pages->showContent();
    {
        const QSignalBlocker block(m_slider);
        m_slider->setRange(0, m_scans->scanCount() - 1);
    }
    scanChanged();
}

void RetainedGraphsView::scanChanged() {
    if (!m_scans || m_scans->scanCount() == 0) return;
    const int scan = m_scans->currentScan();
    m_updating = true;
    m_slider->setValue(scan);
    m_previous->setEnabled(scan > 0);
    m_next->setEnabled(scan + 1 < m_scans->scanCount());
    m_model->setScans(m_scans->sharedScans(), scan);
    // groups of several roots open by default while few
    for (int r = 0; r < m_proxy->rowCount() && r < 8; ++r) {
        const QModelIndex i = m_proxy->index(r, 0);
        if (m_proxy->rowCount(i) > 0 && m_proxy->rowCount(i) <= 12) m_tree->expand(i);
    }
    m_updating = false;
    // the first columns as wide as their text (within reason); growth gets the rest
    for (int c = RetainedGraphsModel::RootColumn; c < RetainedGraphsModel::ColumnCount - 1; ++c) {
        m_tree->resizeColumnToContents(c);
        const int cap = c == RetainedGraphsModel::RootColumn ? 300 : c == RetainedGraphsModel::GrowthColumn ? 420 : 200;
        if (m_tree->columnWidth(c) > cap) m_tree->setColumnWidth(c, cap);
    }

    const model::GraphScanData& s = *m_scans->currentScanData();
    QString it = tr("Iteration %1").arg(s.iteration);
    if (!s.phase.empty()) it += QStringLiteral(" (%1)").arg(QString::fromStdString(s.phase));
    m_iteration->setText(it + tr(" \u00b7 scan %1 of %2").arg(scan + 1).arg(m_scans->scanCount()));

    int64_t alive = 0, released = 0, hooked = 0;
    bool listed = true;
    std::set<std::string> groups;
    for (const auto& g : s.graphs) {
        alive += g.savedAlive;
        released += g.savedReleased;
        hooked += g.savedHooked;
        listed = listed && g.savedListed;
        groups.insert(g.pattern);
    }
    QString text;
    if (!s.error.empty()) {
        text = tr("<span style='color:#b3261e'>This scan could not be read: %1</span>").arg(QString::fromStdString(s.error).toHtmlEscaped());
    } else if (s.graphs.empty()) {
        text = tr("No retained graphs in this scan.");
    } else {
        text = tr("<b>%1</b> retained in <b>%2</b> %3 under %4 %5")
                   .arg(formatBytes(s.totalRetainedBytes))
                   .arg(s.graphs.size())
                   .arg(s.graphs.size() == 1 ? tr("graph") : tr("graphs"))
                   .arg(groups.size())
                   .arg(groups.size() == 1 ? tr("name") : tr("names"));
        if (listed) {
            text += tr(" \u00b7 saved tensors: %1 alive").arg(alive);
            if (released) text += tr(", %1 released").arg(released);
            if (hooked) text += tr(", %1 hooked").arg(hooked);
        }
    }
    if (!s.note.empty()) text += QStringLiteral("<br><i>%1</i>").arg(QString::fromStdString(s.note).toHtmlEscaped());
    if (s.partial)
        text += tr("<br><span style='color:#9a6700'>\u26a0 partial scan: %1</span>")
                    .arg(QString::fromStdString(s.partialReason.empty() ? "cut short" : s.partialReason).toHtmlEscaped());
    if (s.hookDetection == "unavailable") text += tr("<br>hooked saved tensors could not be told apart: none was inspected");
    m_summary->setText(text);
    selectFromDocument();
}

void RetainedGraphsView::selectFromDocument() {
    if (!m_scans || m_updating) return;
    const QModelIndex src = m_model->indexOfGraph(m_scans->selectedGraph());
    const QModelIndex i = m_proxy->mapFromSource(src);
    m_updating = true;
    if (i.isValid()) {
        if (i.parent().isValid()) m_tree->expand(i.parent());
        m_tree->selectionModel()->setCurrentIndex(i, QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
        m_tree->scrollTo(i);
    } else {
        m_tree->selectionModel()->clearSelection();
    }
    m_updating = false;
}

void RetainedGraphsView::rowSelected() {
    if (!m_scans || m_updating) return;
    const QModelIndex i = m_tree->selectionModel()->currentIndex();
    if (!i.isValid()) return;
    int graph = i.data(RetainedGraphsModel::GraphRole).toInt();
    if (graph < 0) {
        // a group of several: its largest root
        const QModelIndex first = m_proxy->index(0, 0, i.sibling(i.row(), 0));
        if (first.isValid()) graph = first.data(RetainedGraphsModel::GraphRole).toInt();
    }
    if (graph >= 0) m_scans->selectGraph(graph);
}

} // namespace memlens::views
