#include "sites/AllocationSitesView.h"
#include "common/ByteText.h"

#include "memlens/model/ParseError.h"
#include "sites/AllocationSitesModel.h"
#include "document/SnapshotDocument.h"

#include <QButtonGroup>
#include <QCheckBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QLocale>
#include <QRadioButton>
#include <QSignalBlocker>
#include <QSortFilterProxyModel>
#include <QTabWidget>
#include <QTimer>
#include <QTreeView>
#include <QVBoxLayout>

#include <algorithm>

namespace memlens::views {

namespace {

QString number(uint64_t n) { return QLocale().toString(static_cast<qulonglong>(n)); }

QSortFilterProxyModel* makeProxy(AllocationSitesModel* source, QObject* parent) {
    auto* p = new QSortFilterProxyModel(parent);
    p->setSourceModel(source);
    p->setRecursiveFilteringEnabled(true);
    p->setAutoAcceptChildRows(true);
    p->setFilterCaseSensitivity(Qt::CaseInsensitive);
    p->setFilterRole(AllocationSitesModel::FilterRole);
    p->setFilterKeyColumn(AllocationSitesModel::FunctionColumn);
    p->setSortRole(AllocationSitesModel::SortRole);
    return p;
}

} // namespace

AllocationSitesView::AllocationSitesView(QWidget* parent) : QWidget(parent) {
    m_pool.setMaxThreadCount(1);

    auto* v = new QVBoxLayout(this);
    v->setContentsMargins(6, 6, 6, 6);
    v->setSpacing(4);

    auto* bar = new QHBoxLayout;
    m_atEntry = new QRadioButton(tr("At the current entry"), this);
    m_atEntry->setToolTip(tr("What is live right after the current trace entry"));
    m_inRange = new QRadioButton(tr("Selected range"), this);
    m_inRange->setToolTip(tr("What the allocations in the selected range of entries asked for"));
    auto* group = new QButtonGroup(this);
    group->addButton(m_atEntry);
    group->addButton(m_inRange);
    m_atEntry->setChecked(true);
    m_native = new QCheckBox(tr("C++ frames"), this);
    m_native->setToolTip(tr("Keep native frames in stacks that also have Python frames"));
    m_search = new QLineEdit(this);
    m_search->setPlaceholderText(tr("Search functions and files"));
    m_search->setClearButtonEnabled(true);
    bar->addWidget(m_atEntry);
    bar->addWidget(m_inRange);
    bar->addSpacing(12);
    bar->addWidget(m_native);
    bar->addSpacing(12);
    bar->addWidget(m_search, 1);
    v->addLayout(bar);

    m_status = new QLabel(this);
    m_status->setTextFormat(Qt::RichText);
    m_status->setWordWrap(true);
    v->addWidget(m_status);

    m_bottomUp = new AllocationSitesModel(AllocationSitesModel::Tree::BottomUp, this);
    m_topDown = new AllocationSitesModel(AllocationSitesModel::Tree::TopDown, this);
    m_bottomUpProxy = makeProxy(m_bottomUp, this);
    m_topDownProxy = makeProxy(m_topDown, this);
    m_tabs = new QTabWidget(this);
    m_bottomUpTree = makeTree(m_bottomUpProxy);
    m_topDownTree = makeTree(m_topDownProxy);
    m_tabs->addTab(m_bottomUpTree, tr("Bottom-up"));
    m_tabs->setTabToolTip(0, tr("Where memory is allocated, with the callers below"));
    m_tabs->addTab(m_topDownTree, tr("Top-down"));
    m_tabs->setTabToolTip(1, tr("From the outermost caller down to where memory is allocated"));
    v->addWidget(m_tabs, 1);

    m_searchTimer = new QTimer(this);
    m_searchTimer->setSingleShot(true);
    m_searchTimer->setInterval(200);
    connect(m_search, &QLineEdit::textChanged, m_searchTimer, qOverload<>(&QTimer::start));
    connect(m_searchTimer, &QTimer::timeout, this, [this] {
        const QString text = m_search->text().trimmed();
        m_bottomUpProxy->setFilterFixedString(text);
        m_topDownProxy->setFilterFixedString(text);
        if (!text.isEmpty()) {
            m_bottomUpTree->expandAll();
            m_topDownTree->expandAll();
        }
    });
    connect(m_atEntry, &QRadioButton::toggled, this, [this] { request(); });
    connect(m_native, &QCheckBox::toggled, this, [this] { request(); });

    setDocument(nullptr);
}

AllocationSitesView::~AllocationSitesView() {
    if (m_cancel) m_cancel->store(true);
    m_pool.waitForDone();
}

QTreeView* AllocationSitesView::makeTree(QSortFilterProxyModel* proxy) {
    auto* t = new QTreeView(this);
    t->setModel(proxy);
    t->setUniformRowHeights(true);
    t->setAlternatingRowColors(true);
    t->setSortingEnabled(true);
    t->sortByColumn(AllocationSitesModel::BytesColumn, Qt::DescendingOrder);
    t->setTextElideMode(Qt::ElideMiddle);
    QHeaderView* h = t->header();
    h->setStretchLastSection(false);
    h->setSectionResizeMode(AllocationSitesModel::FunctionColumn, QHeaderView::Stretch);
    h->setSectionResizeMode(AllocationSitesModel::LocationColumn, QHeaderView::Interactive);
    h->resizeSection(AllocationSitesModel::LocationColumn, 240);
    for (int c : {int(AllocationSitesModel::BytesColumn), int(AllocationSitesModel::PercentColumn),
                  int(AllocationSitesModel::CountColumn)})
        h->setSectionResizeMode(c, QHeaderView::ResizeToContents);
    connect(t->selectionModel(), &QItemSelectionModel::currentChanged, this,
            [this](const QModelIndex& current) { nodeActivated(current); });
    return t;
}

void AllocationSitesView::resizeEvent(QResizeEvent* event) {
    QWidget::resizeEvent(event);
    // the location column takes about a third of the width, so functions keep room when narrow
    const int location = std::clamp(width() * 3 / 10, 110, 320);
    for (QTreeView* t : {m_bottomUpTree, m_topDownTree}) t->header()->resizeSection(AllocationSitesModel::LocationColumn, location);
}

void AllocationSitesView::setDocument(SnapshotDocument* doc) {
    if (m_doc) disconnect(m_doc, nullptr, this, nullptr);
    m_doc = doc;
    if (m_doc) {
        connect(m_doc, &SnapshotDocument::deviceChanged, this, &AllocationSitesView::request);
        connect(m_doc, &SnapshotDocument::currentEventChanged, this, [this] {
            if (mode() == Mode::CurrentEntry) request();
        });
        connect(m_doc, &SnapshotDocument::selectionChanged, this, &AllocationSitesView::selectionChanged);
        connect(m_doc, &QObject::destroyed, this, [this] { setDocument(nullptr); });
    }
    selectionChanged();  // requests the trees
}

AllocationSitesView::Mode AllocationSitesView::mode() const {
    return m_inRange->isChecked() && m_inRange->isEnabled() ? Mode::SelectedRange : Mode::CurrentEntry;
}

void AllocationSitesView::setMode(Mode mode) {
    (mode == Mode::SelectedRange ? m_inRange : m_atEntry)->setChecked(true);
}

void AllocationSitesView::setShowNativeFrames(bool show) { m_native->setChecked(show); }

void AllocationSitesView::setSearchText(const QString& text) { m_search->setText(text); }

QString AllocationSitesView::statusText() const { return m_status->text(); }

void AllocationSitesView::selectionChanged() {
    const bool has = m_doc && m_doc->selection().has_value();
    {
        // a new selection is what the user wants to look at; without one, the current entry
        const QSignalBlocker blockEntry(m_atEntry), blockRange(m_inRange);
        m_inRange->setEnabled(has);
        if (has) {
            const auto [first, last] = *m_doc->selection();
            m_inRange->setText(tr("Selected range #%1\u2013#%2").arg(first).arg(last));
            m_inRange->setChecked(true);
        } else {
            m_inRange->setText(tr("Selected range"));
            m_atEntry->setChecked(true);
        }
    }
    request();
}

void AllocationSitesView::request() {
    ++m_generation;
    if (m_cancel) m_cancel->store(true);
    if (!m_doc) {
        m_pending = false;
        m_bottomUp->clear();
        m_topDown->clear();
        m_status->setText(tr("No snapshot open. Allocation sites group live memory by the stack that allocated it."));
        emit sitesUpdated();
        return;
    }
    auto cancel = std::make_shared<std::atomic<bool>>(false);
    m_cancel = cancel;
    m_pending = true;
    const quint64 generation = m_generation;
    std::shared_ptr<const model::Snapshot> snapshot = m_doc->loaded().snapshot;
    model::SitesOptions options;
    options.skipNative = !m_native->isChecked();
    options.cancel = cancel.get();

    std::function<model::AllocationSites()> job;
    QString status;
    if (mode() == Mode::SelectedRange) {
        // not a structured binding: lambdas cannot capture those before clang 16
        const int64_t first = m_doc->selection()->first, last = m_doc->selection()->second;
        const int device = m_doc->device();
        job = [snapshot, device, first, last, options] {
            const model::DeviceData* d = snapshot->device(device);
            if (!d) return model::AllocationSites{};
            return model::allocationSitesInRange(*snapshot, *d, first, last, options);
        };
        status = QStringLiteral("range:%1:%2").arg(first).arg(last);
    } else {
        // the state's live blocks by stack are few and quick to gather here; the trees go off-thread
        auto costs = std::make_shared<std::vector<model::StackCost>>(model::stackCostsAt(m_doc->currentState()));
        job = [snapshot, costs, options] { return model::buildAllocationSites(*snapshot, *costs, options); };
        status = QStringLiteral("entry:%1").arg(m_doc->currentEvent());
    }
    m_status->setText(tr("Computing\u2026"));
    m_pool.start([this, job, cancel, generation, status] {
        try {
            auto sites = std::make_shared<const model::AllocationSites>(job());
            if (cancel->load()) return;
            // the view waits for this pool in its destructor, so `this` is alive here
            QMetaObject::invokeMethod(
                this, [this, generation, sites, status] { apply(generation, sites, status); }, Qt::QueuedConnection);
        } catch (const model::Cancelled&) {
        }
    });
}

void AllocationSitesView::apply(quint64 generation, std::shared_ptr<const model::AllocationSites> sites, QString status) {
    if (generation != m_generation || !m_doc) return;  // superseded
    m_pending = false;
    const bool range = status.startsWith(QLatin1String("range:"));
    m_bottomUp->setSites(m_doc->loaded().snapshot, sites, range);
    m_topDown->setSites(m_doc->loaded().snapshot, sites, range);
    const QStringList parts = status.split(QLatin1Char(':'));
    QString text;
    if (range) {
        text = tr("Entries #%1\u2013#%2: <b>%3</b> allocated in %4 allocations from %5 stacks; <b>%6</b> of it still "
                  "live at #%2")
                   .arg(parts.value(1), parts.value(2), formatBytes(sites->totalBytes), number(sites->totalCount),
                        number(sites->distinctStacks), formatBytes(sites->liveBytes));
    } else {
        const QString at = parts.value(1) == QLatin1String("-1") ? tr("before the first entry") : tr("after entry #%1").arg(parts.value(1));
        text = tr("Live %1: <b>%2</b> in %3 allocations from %4 stacks")
                   .arg(at, formatBytes(sites->totalBytes), number(sites->totalCount), number(sites->distinctStacks));
    }
    if (sites->totalCount == 0) text += tr(" \u2014 nothing to show");
    m_status->setText(text);
    expandHeaviest(m_bottomUpTree);
    expandHeaviest(m_topDownTree);
    emit sitesUpdated();
}

void AllocationSitesView::expandHeaviest(QTreeView* tree) {
    // the heaviest root that has callers (or callees), a few levels down
    const QAbstractItemModel* m = tree->model();
    QModelIndex i;
    for (int r = 0; r < m->rowCount() && !i.isValid(); ++r)
        if (m->hasChildren(m->index(r, 0))) i = m->index(r, 0);
    for (int depth = 0; depth < 4 && i.isValid(); ++depth) {
        tree->expand(i);
        i = tree->model()->index(0, 0, i);
    }
}

void AllocationSitesView::nodeActivated(const QModelIndex& proxyIndex) {
    if (!m_doc || !proxyIndex.isValid()) return;
    auto* proxy = static_cast<const QSortFilterProxyModel*>(proxyIndex.model());
    const QModelIndex source = proxy->mapToSource(proxyIndex);
    auto* model = static_cast<const AllocationSitesModel*>(source.model());
    const auto stack = static_cast<model::StackId>(source.data(AllocationSitesModel::StackRole).toUInt());
    m_doc->selectAllocation(stack, model->describe(source));
}

} // namespace memlens::views
