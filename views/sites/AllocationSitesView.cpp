#include "sites/AllocationSitesView.h"
#include "common/ByteText.h"

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

// the running build is cancelled; its trees are freed on the worker
AllocationSitesView::~AllocationSitesView() = default;

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
        connect(m_doc, &SnapshotDocument::stateReady, this, [this] {
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
    m_jobs.cancel();
    if (!m_doc) {
        m_bottomUp->clear();
        m_topDown->clear();
        m_status->setText(tr("No snapshot open. Allocation sites group live memory by the stack that allocated it."));
        emit sitesUpdated();
        return;
    }
    std::shared_ptr<const model::Snapshot> snapshot = m_doc->loaded().snapshot;
    model::SitesOptions options;
    options.skipNative = !m_native->isChecked();

    std::function<model::AllocationSites(const model::SitesOptions&)> build;
    Request what;
    if (mode() == Mode::SelectedRange) {
        // not a structured binding: lambdas cannot capture those before clang 16
        const int64_t first = m_doc->selection()->first, last = m_doc->selection()->second;
        const int device = m_doc->device();
        build = [snapshot, device, first, last](const model::SitesOptions& o) {
            const model::DeviceData* d = snapshot->device(device);
            if (!d) return model::AllocationSites{};
            return model::allocationSitesInRange(*snapshot, *d, first, last, o);
        };
        what.kind = Request::Kind::InRange;
        what.first = first;
        what.last = last;
    } else if (m_doc->isStatePending()) {
        m_status->setText(SnapshotDocument::statePendingText());  // stateReady asks again
        return;
    } else {
        // the state's live blocks by stack are few and quick to gather here; the trees go off-thread
        auto costs = std::make_shared<std::vector<model::StackCost>>(model::stackCostsAt(m_doc->currentState()));
        build = [snapshot, costs](const model::SitesOptions& o) { return model::buildAllocationSites(*snapshot, *costs, o); };
        what.kind = Request::Kind::AtEntry;
        what.entry = m_doc->currentEvent();
    }
    m_status->setText(tr("Computing\u2026"));
    using Sites = std::shared_ptr<const model::AllocationSites>;
    JobHandlers<Sites> h;
    h.done = [this, what](quint64, Sites sites) { apply(std::move(sites), what); };
    h.failed = [this](quint64, const QString& message) { failed(message); };
    m_jobs.start<Sites>(
        [build, options, hook = m_buildHook](const JobControl& job) {
            if (hook) hook();
            model::SitesOptions o = options;
            o.cancel = job.cancelFlag();
            return std::make_shared<const model::AllocationSites>(build(o));
        },
        std::move(h), JobText{{}, QStringLiteral("build the allocation sites")});
}

void AllocationSitesView::apply(std::shared_ptr<const model::AllocationSites> sites, const Request& request) {
    if (!m_doc) return;
    const bool range = request.kind == Request::Kind::InRange;
    m_bottomUp->setSites(m_doc->loaded().snapshot, sites, range);
    m_topDown->setSites(m_doc->loaded().snapshot, sites, range);
    QString text;
    if (range) {
        text = tr("Entries #%1\u2013#%2: <b>%3</b> allocated in %4 allocations from %5 stacks; <b>%6</b> of it still "
                  "live at #%2")
                   .arg(QString::number(request.first), QString::number(request.last), formatBytes(sites->totalBytes),
                        number(sites->totalCount), number(sites->distinctStacks), formatBytes(sites->liveBytes));
    } else {
        const QString at = request.entry == -1 ? tr("before the first entry") : tr("after entry #%1").arg(request.entry);
        text = tr("Live %1: <b>%2</b> in %3 allocations from %4 stacks")
                   .arg(at, formatBytes(sites->totalBytes), number(sites->totalCount), number(sites->distinctStacks));
    }
    if (sites->totalCount == 0) text += tr(" \u2014 nothing to show");
    m_status->setText(text);
    expandHeaviest(m_bottomUpTree);
    expandHeaviest(m_topDownTree);
    emit sitesUpdated();
}

void AllocationSitesView::failed(const QString& message) {
    m_bottomUp->clear();
    m_topDown->clear();
    m_status->setText(tr("Allocation sites could not be built: %1").arg(message.toHtmlEscaped()));
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
