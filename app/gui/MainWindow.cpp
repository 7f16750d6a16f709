#include "MainWindow.h"

#include "AttachDialog.h"
#include "AttachProcess.h"
#include "SelectionExport.h"
#include "ErrorBanner.h"
#include "ExampleSnapshot.h"
#include "GraphScansBinding.h"
#include "IterationStrip.h"
#include "LoadProgressPanel.h"
#include "NavigationActions.h"
#include "RecentFiles.h"
#include "SessionLoader.h"
#include "SessionPanel.h"
#include "StartPage.h"

#include "blockmap/BlockMapView.h"
#include "breakdown/BreakdownView.h"
#include "common/ByteText.h"
#include "document/GraphScansDocument.h"
#include "document/SnapshotDocument.h"
#include "document/SnapshotLoader.h"
#include "timeline/TimelineView.h"
#include "whatif/WhatIfView.h"
#include "findings/FindingsView.h"
#include "iterdiff/IterationDiffView.h"

#include <algorithm>

#include <QAction>
#include <QApplication>
#include <QCloseEvent>
#include <QComboBox>
#include <QDockWidget>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QPointer>
#include <QSet>
#include <QSettings>
#include <QStatusBar>
#include <QTabBar>
#include <QTimer>
#include <QToolBar>
#include <QVBoxLayout>

#include <cmath>

namespace memlens::gui {

namespace {
constexpr int kLayoutVersion = 4;  // 2: the What-if dock; 3: Findings; 4: Iteration diff
const QString kGeometryKey = QStringLiteral("window/geometry");
const QString kStateKey = QStringLiteral("window/state");

QStringList localFiles(const QMimeData* mime) {
    QStringList out;
    if (!mime || !mime->hasUrls()) return out;
    const QList<QUrl> urls = mime->urls();
    for (const QUrl& url : urls)
        if (url.isLocalFile()) out << url.toLocalFile();
    return out;
}
} // namespace

MainWindow::MainWindow(bool persistent, QWidget* parent) : QMainWindow(parent), m_persistent(persistent) {
    setObjectName(QStringLiteral("memlensWindow"));
    setWindowIcon(QIcon::fromTheme(QStringLiteral("memlens")));
    setAcceptDrops(true);
    setDockOptions(QMainWindow::AnimatedDocks | QMainWindow::AllowTabbedDocks | QMainWindow::AllowNestedDocks);
    setDocumentMode(true);

    m_loader = new views::SnapshotLoader(this);
    connect(m_loader, &views::SnapshotLoader::progressChanged, this, &MainWindow::onProgress);
    connect(m_loader, &views::SnapshotLoader::loaded, this, &MainWindow::onLoaded);
    connect(m_loader, &views::SnapshotLoader::failed, this, &MainWindow::onFailed);
    m_sessions = new SessionLoader(this);
    connect(m_sessions, &SessionLoader::progressChanged, this, [this](quint64 g, const QString& phase, double f) {
        if (g == m_sessionGeneration) m_progress->setProgress(phase, f);
    });
    connect(m_sessions, &SessionLoader::loaded, this, &MainWindow::onSessionLoaded);
    connect(m_sessions, &SessionLoader::failed, this, [this](quint64 g, const QString& path, const QString& message) {
        if (g != m_sessionGeneration) return;
        m_sessionGeneration = 0;
        loadFailed(path, message);
    });
    m_poll = new QTimer(this);
    m_poll->setInterval(1000);
    connect(m_poll, &QTimer::timeout, this, &MainWindow::pollSession);
    m_recent = new RecentFiles(persistent, this);
    m_nav = new NavigationActions(this);
    connect(m_nav, &NavigationActions::message, this, [this](const QString& m) { statusBar()->showMessage(m, 4000); });

    createTopPanel();
    createActions();
    createToolBar();
    m_start = new StartPage(m_recent, findExampleSnapshot(), this);
    connect(m_start, &StartPage::openRequested, this, &MainWindow::openDialog);
    connect(m_start, &StartPage::fileRequested, this, [this](const QString& p) { openFiles({p}); });
    setCentralWidget(m_start);
    createDocks();
    m_entryStatus = new QLabel(this);
    statusBar()->addPermanentWidget(m_entryStatus);
    resize(1400, 900);
    arrangeDefaultLayout();
    m_defaultState = saveState(kLayoutVersion);
    if (m_persistent) restoreLayout();
    showDocument(-1);
}

MainWindow::~MainWindow() {
    if (m_attach) {
        m_attach->disconnect(this);
        delete m_attach;  // detaches (bounded wait)
    }
    for (Dock& d : m_docks) d.view.setDocument(nullptr);
    m_nav->setDocument(nullptr);
}

void MainWindow::createTopPanel() {
    // menu bar, then the error banner and the load progress: always at the top, above the docks
    auto* panel = new QWidget(this);
    auto* v = new QVBoxLayout(panel);
    v->setContentsMargins(0, 0, 0, 0);
    v->setSpacing(0);
    auto* menus = new QMenuBar(panel);
    v->addWidget(menus);
    m_banner = new ErrorBanner(panel);
    v->addWidget(m_banner);
    // the doctor's verdict on the current file, one line; the link raises the Findings dock
    m_findingsBanner = new QLabel(panel);
    m_findingsBanner->setObjectName(QStringLiteral("findingsBanner"));
    m_findingsBanner->setTextFormat(Qt::RichText);
    m_findingsBanner->setContentsMargins(8, 3, 8, 3);
    m_findingsBanner->setStyleSheet(QStringLiteral("QLabel#findingsBanner { background: #fff4d6; color: #3b2f00; }"));
    m_findingsBanner->hide();
    connect(m_findingsBanner, &QLabel::linkActivated, this, [this] { raiseView(QStringLiteral("findings")); });
    v->addWidget(m_findingsBanner);
    m_progress = new LoadProgressPanel(panel);
    connect(m_progress, &LoadProgressPanel::cancelRequested, this, &MainWindow::cancelLoading);
    v->addWidget(m_progress);
    setMenuWidget(panel);
}

void MainWindow::createActions() {
    auto* menus = menuWidget()->findChild<QMenuBar*>();
    QMenu* file = menus->addMenu(tr("&File"));
    QAction* open = file->addAction(QIcon::fromTheme(QStringLiteral("document-open")), tr("&Open…"), this, &MainWindow::openDialog);
    open->setShortcut(QKeySequence::Open);
    open->setObjectName(QStringLiteral("openAction"));
    QAction* attach = file->addAction(tr("&Attach…"), this, &MainWindow::attachDialog);
    attach->setObjectName(QStringLiteral("attachAction"));
    attach->setToolTip(
        tr("Follow a session that memlens-cli record is writing on this machine, or attach to a running PyTorch process"));
    m_detach = file->addAction(tr("&Detach"), this, &MainWindow::detach);
    m_detach->setObjectName(QStringLiteral("detachAction"));
    m_detach->setToolTip(tr("Stop recording the attached process; the job keeps running"));
    m_detach->setEnabled(false);
    m_recentMenu = file->addMenu(tr("Open &Recent"));
    connect(m_recent, &RecentFiles::changed, this, &MainWindow::rebuildRecentMenu);
    rebuildRecentMenu();
    QAction* example = file->addAction(tr("Open the &Example"), this, [this] { openFiles({findExampleSnapshot()}); });
    example->setEnabled(!findExampleSnapshot().isEmpty());
    m_export = new SelectionExport(this);
    m_exportSelection = file->addAction(tr("&Export Selection…"), this, &MainWindow::exportSelection);
    m_exportSelection->setObjectName(QStringLiteral("exportSelectionAction"));
    m_exportSelection->setToolTip(tr("Write the selected range of entries as a smaller snapshot that PyTorch's memory_viz "
                                     "opens (drag on the timeline to select a range)"));
    m_exportSelection->setEnabled(false);
    connect(m_export, &SelectionExport::finished, this, [this](const QString& m) {
        statusBar()->showMessage(m, 8000);
        updateExportAction();
    });
    connect(m_export, &SelectionExport::failed, this, [this](const QString& m) {
        statusBar()->clearMessage();
        m_banner->showError(m);
        updateExportAction();
    });
    file->addSeparator();
    m_closeTab = file->addAction(tr("&Close"), this, [this] { closeDocument(m_tabs->currentIndex()); });
    m_closeTab->setShortcut(QKeySequence::Close);
    file->addSeparator();
    QAction* quit = file->addAction(tr("&Quit"), this, &QWidget::close);
    quit->setShortcut(QKeySequence::Quit);
    for (QAction* a : {open, m_closeTab, quit}) addAction(a);

    m_viewMenu = menus->addMenu(tr("&View"));
    QMenu* navigate = menus->addMenu(tr("&Navigate"));
    m_nav->fillMenu(navigate);
    navigate->addSeparator();
    m_nextIteration = navigate->addAction(tr("Next &Iteration"), this, [this] { stepIteration(1); });
    m_nextIteration->setShortcut(QKeySequence(Qt::ALT | Qt::Key_Down));
    m_nextIteration->setToolTip(tr("The next iteration of the session, and its snapshot if it has one (Alt+Down)"));
    m_previousIteration = navigate->addAction(tr("Previous I&teration"), this, [this] { stepIteration(-1); });
    m_previousIteration->setShortcut(QKeySequence(Qt::ALT | Qt::Key_Up));
    m_previousIteration->setToolTip(tr("The previous iteration of the session (Alt+Up)"));
    for (QAction* a : {m_nextIteration, m_previousIteration}) addAction(a);

    QMenu* help = menus->addMenu(tr("&Help"));
    help->addAction(tr("&About memlens"), this, [this] {
        QMessageBox::about(this, tr("About memlens"),
                           tr("<b>memlens %1</b><p>Where the GPU memory of a PyTorch job goes, and who keeps it.</p>"
                              "<p>Reads PyTorch CUDA memory snapshots (torch 2.0 to 2.11) without running Python.</p>")
                               .arg(QApplication::applicationVersion()));
    });
}

void MainWindow::createToolBar() {
    QToolBar* bar = addToolBar(tr("Main"));
    bar->setObjectName(QStringLiteral("mainToolBar"));
    bar->setMovable(false);
    bar->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
    QAction* open = findChild<QAction*>(QStringLiteral("openAction"));
    bar->addAction(open);
    bar->addSeparator();
    m_tabs = new QTabBar(bar);
    m_tabs->setDocumentMode(true);
    m_tabs->setTabsClosable(true);
    m_tabs->setMovable(true);
    m_tabs->setExpanding(false);
    m_tabs->setElideMode(Qt::ElideMiddle);
    m_tabs->setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Preferred);
    connect(m_tabs, &QTabBar::currentChanged, this, &MainWindow::showDocument);
    connect(m_tabs, &QTabBar::tabCloseRequested, this, &MainWindow::closeDocument);
    connect(m_tabs, &QTabBar::tabMoved, this, [this](int from, int to) { m_documents.move(from, to); });
    bar->addWidget(m_tabs);
    bar->addSeparator();
    auto* deviceLabel = new QLabel(tr(" Device: "), bar);
    bar->addWidget(deviceLabel);
    m_devices = new QComboBox(bar);
    m_devices->setSizeAdjustPolicy(QComboBox::AdjustToContents);
    m_devices->setToolTip(tr("The GPU whose memory the views show"));
    connect(m_devices, &QComboBox::activated, this, [this](int i) {
        if (auto* doc = currentDocument()) doc->setDevice(m_devices->itemData(i).toInt());
    });
    bar->addWidget(m_devices);
    bar->addSeparator();
    bar->addAction(m_nav->previousEvent);
    bar->addAction(m_nav->nextEvent);
    m_nav->previousEvent->setIconText(QStringLiteral("◀"));
    m_nav->nextEvent->setIconText(QStringLiteral("▶"));
    bar->addAction(m_nav->back);
    m_nav->back->setIconText(tr("Back"));
    bar->addAction(m_nav->resetSelection);
    m_nav->resetSelection->setIconText(tr("Clear selection"));
}

void MainWindow::createDocks() {
    const QList<ViewInfo> catalog = viewCatalog();
    for (const ViewInfo& info : catalog) {
        Dock d;
        d.info = info;
        d.dock = new QDockWidget(info.title, this);
        d.dock->setObjectName(info.objectName);
        d.view = createView(info.name, d.dock);
        d.dock->setWidget(d.view.widget);
        m_viewMenu->addAction(d.dock->toggleViewAction());
        m_docks.append(d);
    }
    connectWhatIf();
    connectFindings();
    m_sessionDock = new QDockWidget(tr("Session"), this);
    m_sessionDock->setObjectName(QStringLiteral("sessionDock"));
    m_sessionPanel = new SessionPanel(m_sessionDock);
    m_sessionDock->setWidget(m_sessionPanel);
    connect(m_sessionPanel, &SessionPanel::iterationClicked, this, &MainWindow::selectIteration);
    connect(m_sessionPanel, &SessionPanel::message, this, [this](const QString& m) { statusBar()->showMessage(m, 6000); });
    m_viewMenu->addAction(m_sessionDock->toggleViewAction());
    m_viewMenu->addSeparator();
    m_viewMenu->addAction(tr("&Reset Layout"), this, [this] {
        if (m_docksShown) restoreState(m_defaultState, kLayoutVersion);
        else m_hiddenDocksState = m_defaultState;
    });
}

// What-if draws its simulated curves on the timeline and its simulated state in the block map.
void MainWindow::connectWhatIf() {
    auto* whatIf = qobject_cast<views::WhatIfView*>(dock(QStringLiteral("whatif"))->widget());
    auto* timeline = qobject_cast<views::TimelineView*>(dock(QStringLiteral("timeline"))->widget());
    auto* blocks = qobject_cast<views::BlockMapView*>(dock(QStringLiteral("blocks"))->widget());
    connect(whatIf, &views::WhatIfView::simulatedSeriesChanged, timeline, &views::TimelineView::setSimulatedSeries);
    connect(whatIf, &views::WhatIfView::simulatedStateChanged, blocks, &views::BlockMapView::setSimulatedState);
}

void MainWindow::connectFindings() {
    auto* findings = qobject_cast<views::FindingsView*>(dock(QStringLiteral("findings"))->widget());
    connect(findings, &views::FindingsView::reportChanged, this, &MainWindow::updateFindingsBanner);
    // a finding's iterations on the session's strip, its retained graph in Graph
    connect(findings, &views::FindingsView::findingSelected, this, [this](const model::Finding& f) {
        views::SnapshotDocument* doc = currentDocument();
        if (!doc || !SessionState::of(doc)) return;
        m_sessionPanel->strip()->setHighlighted(f.iterations);
        if (f.graphPattern.empty()) return;
        views::GraphScansDocument* g = graphScansFor(doc);
        if (!g || g->scanCount() == 0) return;
        g->setCurrentScan(g->scanCount() - 1);
        const model::GraphScanData* scan = g->currentScanData();
        for (size_t i = 0; scan && i < scan->graphs.size(); ++i)
            if (scan->graphs[i].pattern == f.graphPattern) {
                g->selectGraph(static_cast<int>(i));
                raiseView(QStringLiteral("graph"));
                break;
            }
    });
    // "What if this were fixed?": the finding's fix replayed in the What-if dock
    auto* whatIf = qobject_cast<views::WhatIfView*>(dock(QStringLiteral("whatif"))->widget());
    connect(findings, &views::FindingsView::fixRequested, this, [this, whatIf](const model::FindingFix& fix) {
        raiseView(QStringLiteral("whatif"));
        whatIf->runFix(fix);
    });
}

void MainWindow::updateFindingsBanner() {
    auto* findings = qobject_cast<views::FindingsView*>(dock(QStringLiteral("findings"))->widget());
    const QString text = findings->document() == currentDocument() ? findings->bannerText() : QString();
    if (text.isEmpty()) {
        m_findingsBanner->hide();
        m_findingsBanner->clear();
        m_findingsBanner->setToolTip(QString());
        return;
    }
    m_findingsBanner->setText(text.toHtmlEscaped() + QStringLiteral(" &nbsp;<a href=\"findings\">%1</a>").arg(tr("Show findings")));
    m_findingsBanner->setToolTip(text);
    m_findingsBanner->show();
}

QString MainWindow::findingsBannerText() const { return m_findingsBanner->toolTip(); }

void MainWindow::selectFinding(int row) {
    qobject_cast<views::FindingsView*>(dock(QStringLiteral("findings"))->widget())->selectFinding(row);
}

QDockWidget* MainWindow::dock(const QString& name) const {
    for (const Dock& d : m_docks)
        if (d.info.name == name) return d.dock;
    return nullptr;
}

void MainWindow::arrangeDefaultLayout() {
    // Timeline across the top; below it the entries (and sites), the block map (and breakdown),
    // and the stack of what is selected.
    QDockWidget* timeline = dock(QStringLiteral("timeline"));
    QDockWidget* events = dock(QStringLiteral("events"));
    QDockWidget* sites = dock(QStringLiteral("sites"));
    QDockWidget* blocks = dock(QStringLiteral("blocks"));
    QDockWidget* breakdown = dock(QStringLiteral("breakdown"));
    QDockWidget* stack = dock(QStringLiteral("stack"));
    addDockWidget(Qt::TopDockWidgetArea, timeline);
    addDockWidget(Qt::TopDockWidgetArea, m_sessionDock);
    splitDockWidget(timeline, m_sessionDock, Qt::Vertical);
    addDockWidget(Qt::BottomDockWidgetArea, events);
    splitDockWidget(events, blocks, Qt::Horizontal);
    splitDockWidget(blocks, stack, Qt::Horizontal);
    tabifyDockWidget(events, sites);
    tabifyDockWidget(blocks, breakdown);
    tabifyDockWidget(blocks, dock(QStringLiteral("whatif")));
    tabifyDockWidget(events, dock(QStringLiteral("findings")));
    tabifyDockWidget(events, dock(QStringLiteral("iterdiff")));
    // retained graphs (sessions with graph scans): the list beside the entries, the graph beside the stack
    tabifyDockWidget(events, dock(QStringLiteral("graphs")));
    tabifyDockWidget(stack, dock(QStringLiteral("graph")));
    stack->raise();
    events->raise();
    blocks->raise();
    resizeDocks({timeline, events}, {46, 54}, Qt::Vertical);
    resizeDocks({events, blocks, stack}, {40, 36, 24}, Qt::Horizontal);
}

void MainWindow::restoreLayout() {
    QSettings s;
    restoreGeometry(s.value(kGeometryKey).toByteArray());
    restoreState(s.value(kStateKey).toByteArray(), kLayoutVersion);
}

void MainWindow::saveLayout() const {
    if (!m_persistent) return;
    QSettings s;
    s.setValue(kGeometryKey, saveGeometry());
    s.setValue(kStateKey, m_docksShown ? saveState(kLayoutVersion) : m_hiddenDocksState);
}

bool MainWindow::raiseView(const QString& name) {
    QDockWidget* d = dock(name);
    if (!d) return false;
    if (!m_docksShown) {  // behind the start page: raise it when a file opens
        m_pendingView = name;
        return true;
    }
    d->show();
    d->raise();
    return true;
}

QString MainWindow::bannerMessage() const { return m_banner->message(); }

void MainWindow::rebuildRecentMenu() {
    m_recentMenu->clear();
    const QStringList files = m_recent->files();
    for (const QString& f : files) m_recentMenu->addAction(QFileInfo(f).fileName(), this, [this, f] { openFiles({f}); })->setToolTip(f);
    if (!files.isEmpty()) {
        m_recentMenu->addSeparator();
        m_recentMenu->addAction(tr("Clear List"), m_recent, &RecentFiles::clear);
    }
    m_recentMenu->setEnabled(!files.isEmpty());
}

void MainWindow::openDialog() {
    const QStringList files = QFileDialog::getOpenFileNames(
        this, tr("Open Snapshots"), QString(),
        tr("Snapshots and sessions (*.pickle *.pkl *.pck *.pt *.memlens *.gz *.zst *.xz);;"
           "PyTorch memory snapshots (*.pickle *.pkl *.pck *.pt);;"
           "Compressed snapshots (*.gz *.zst *.xz);;memlens sessions (*.memlens);;All files (*)"));
    if (!files.isEmpty()) openFiles(files);
}

void MainWindow::openFiles(const QStringList& paths) {
    if (paths.isEmpty()) return;
    if (m_loader->isLoading()) m_loader->cancel();
    m_sessions->cancel();
    m_sessionGeneration = 0;
    m_queue = paths;
    startNextLoad();
}

bool MainWindow::isLoading() const { return m_loader->isLoading() || m_sessions->isLoading() || !m_queue.isEmpty(); }

void MainWindow::startNextLoad() {
    if (m_queue.isEmpty()) {
        m_progress->finish();
        return;
    }
    const QString path = m_queue.takeFirst();
    m_progress->start(QFileInfo(path).fileName(), static_cast<int>(m_queue.size()));
    if (isSessionFile(path)) {
        m_generation = 0;
        m_sessionGeneration = m_sessions->load(path);
    } else {
        m_sessionGeneration = 0;
        m_generation = m_loader->load(path);
    }
}

void MainWindow::onProgress(quint64 generation, const QString& phase, double fraction) {
    if (generation == m_generation) m_progress->setProgress(phase, fraction);
}

void MainWindow::cancelLoading() {
    m_queue.clear();
    m_loader->cancel();
    m_sessions->cancel();
    m_sessionGeneration = 0;
    m_progress->finish();
    statusBar()->showMessage(tr("Opening cancelled."), 4000);
}

void MainWindow::onLoaded(quint64 generation, std::shared_ptr<const views::LoadedSnapshot> loaded) {
    if (generation != m_generation) return;
    acceptDocument(new views::SnapshotDocument(std::move(loaded), this));
}

void MainWindow::onSessionLoaded(quint64 generation, std::shared_ptr<SessionLoadResult> result) {
    if (generation != m_sessionGeneration) return;
    m_sessionGeneration = 0;
    auto* doc = new views::SnapshotDocument(result->loaded, this);
    auto* session = new SessionState(std::move(*result), doc);
    // following a live session: the newest iteration stays selected (the job went on meanwhile)
    const auto& its = session->file().iterations();
    if (generation == m_followGeneration && !its.empty()) session->setIteration(its.back().index);
    acceptDocument(doc);
}

void MainWindow::acceptDocument(views::SnapshotDocument* doc) {
    m_recent->add(doc->path());
    m_banner->dismiss();
    addDocument(doc);
    const double seconds = doc->loaded().loadSeconds;
    statusBar()->showMessage(seconds < 1 ? tr("Opened %1 in %2 ms").arg(doc->fileName()).arg(std::lround(seconds * 1000))
                                         : tr("Opened %1 in %2 s").arg(doc->fileName()).arg(seconds, 0, 'f', 1),
                             5000);
    emit documentOpened(doc);
    startNextLoad();
}

void MainWindow::onFailed(quint64 generation, const QString& path, const QString& message) {
    if (generation != m_generation) return;
    loadFailed(path, message);
}

void MainWindow::loadFailed(const QString& path, const QString& message) {
    m_banner->showError(message);
    emit openFailed(path, message);
    startNextLoad();
}

void MainWindow::loadSessionSnapshot(views::SnapshotDocument* doc, int64_t snapshotId, int64_t iteration) {
    m_queue.clear();
    m_loader->cancel();
    m_generation = 0;
    m_progress->start(doc->fileName(), 0);
    // the graph scans the document has are not parsed again
    const SessionState* session = SessionState::of(doc);
    m_sessionGeneration = m_sessions->load(doc->path(), snapshotId, iteration, session ? session->graphScans() : nullptr);
}

void MainWindow::addDocument(views::SnapshotDocument* doc) {
    // the same file again replaces its tab (a reload)
    const QString path = QFileInfo(doc->path()).absoluteFilePath();
    for (int i = 0; i < m_documents.size(); ++i) {
        if (QFileInfo(m_documents[i]->path()).absoluteFilePath() != path) continue;
        views::SnapshotDocument* old = m_documents[i];
        m_documents[i] = doc;
        if (m_tabs->currentIndex() == i) showDocument(i);
        else m_tabs->setCurrentIndex(i);
        old->deleteLater();
        return;
    }
    m_documents.append(doc);
    const int tab = m_tabs->addTab(doc->fileName());
    m_tabs->setTabToolTip(tab, doc->path());
    if (m_tabs->currentIndex() == tab) showDocument(tab);
    else m_tabs->setCurrentIndex(tab);
}

views::SnapshotDocument* MainWindow::currentDocument() const {
    const int i = m_tabs->currentIndex();
    return i >= 0 && i < m_documents.size() ? m_documents[i] : nullptr;
}

void MainWindow::showDocument(int) {
    views::SnapshotDocument* doc = currentDocument();
    // Once per document: a view given the same document again would start its analyses again
    // (adding the first tab shows it twice: the tab bar's currentChanged, then addDocument).
    if (doc != m_shownDocument || !doc)
        for (Dock& d : m_docks) d.view.setDocument(doc);
    m_shownDocument = doc;
    // the Iteration diff can compare the current file with any other open one
    if (auto* diff = qobject_cast<views::IterationDiffView*>(dock(QStringLiteral("iterdiff"))->widget()))
        diff->setOtherDocuments(m_documents);
    m_nav->setDocument(doc);
    for (views::SnapshotDocument* other : std::as_const(m_documents)) disconnect(other, nullptr, this, nullptr);
    if (doc) {
        connect(doc, &views::SnapshotDocument::deviceChanged, this, [this] {
            updateDevices();
            updateStatus();
            updateSession();
        });
        connect(doc, &views::SnapshotDocument::currentEventChanged, this, &MainWindow::updateStatus);
        connect(doc, &views::SnapshotDocument::historiesReady, this, &MainWindow::updateStatus);
        connect(doc, &views::SnapshotDocument::selectionChanged, this, &MainWindow::updateExportAction);
    }
    updateExportAction();
    const bool any = doc != nullptr;
    setDocksShown(any);
    m_closeTab->setEnabled(any);
    updateDevices();
    updateStatus();
    updateTitle();
    showGraphDocks(dock(QStringLiteral("graphs")), dock(QStringLiteral("graph")), doc, m_docksShown);
    updateSession();
}

void MainWindow::updateExportAction() {
    views::SnapshotDocument* doc = currentDocument();
    m_exportSelection->setEnabled(doc && doc->selection().has_value() && !m_export->isRunning());
}

void MainWindow::exportSelection() {
    views::SnapshotDocument* doc = currentDocument();
    if (!doc || !doc->selection()) return;
    const QString dir = QFileInfo(doc->path()).absolutePath();
    const QString path = QFileDialog::getSaveFileName(this, tr("Export Selection"),
                                                      QDir(dir).filePath(SelectionExport::suggestedName(*doc)),
                                                      tr("PyTorch memory snapshots (*.pickle)"));
    if (path.isEmpty()) return;
    exportSelectionTo(path);
}

void MainWindow::exportSelectionTo(const QString& path) {
    views::SnapshotDocument* doc = currentDocument();
    if (!doc || !doc->selection()) return;
    statusBar()->showMessage(tr("Exporting the selection…"));
    m_export->start(*doc, path);
    updateExportAction();
}

void MainWindow::updateSession() {
    views::SnapshotDocument* doc = currentDocument();
    SessionState* session = SessionState::of(doc);
    m_sessionPanel->setSession(session, doc ? doc->device() : 0, session ? traceSpan(doc) : std::nullopt);
    updateTimelineProcessSeries();
    if (m_docksShown) {
        m_sessionDock->setVisible(session != nullptr);
        // the first session in this window: the dock takes its room from the timeline, so give
        // the top more, and the timeline most of it
        if (session && !m_sessionDockSized && !m_sessionDock->isFloating()) {
            m_sessionDockSized = true;
            QTimer::singleShot(0, this, [this] {
                QDockWidget* timeline = dock(QStringLiteral("timeline"));
                resizeDocks({timeline, dock(QStringLiteral("events"))}, {58, 42}, Qt::Vertical);
                resizeDocks({timeline, m_sessionDock}, {60, 40}, Qt::Vertical);
            });
        }
    }
    m_nextIteration->setEnabled(session != nullptr);
    m_previousIteration->setEnabled(session != nullptr);
    if (session && session->file().live()) m_poll->start();
    else m_poll->stop();
    QDockWidget* breakdownDock = dock(QStringLiteral("breakdown"));
    if (auto* breakdown = breakdownDock ? qobject_cast<views::BreakdownView*>(breakdownDock->widget()) : nullptr) {
        breakdown->setProcessFigures(session ? m_sessionPanel->processFigures() : std::nullopt);
        // the agent's tags of the shown snapshot's storages: exact categories
        const model::SessionSnapshot* shown = session ? session->shownSnapshot() : nullptr;
        breakdown->setCategoryTags(shown ? model::categoryTags(shown->infoJson) : model::CategoryTags{});
    }
}

std::optional<std::pair<int64_t, int64_t>> MainWindow::traceSpan(const views::SnapshotDocument* doc) {
    if (!doc || doc->entryCount() == 0) return std::nullopt;
    const model::TraceColumns& t = doc->deviceData().trace;
    const size_t last = t.rows() - 1;
    if (!(t.flags[0] & model::TraceColumns::HasTime) || !(t.flags[last] & model::TraceColumns::HasTime) ||
        t.timeUs[last] < t.timeUs[0])
        return std::nullopt;
    return std::make_pair(t.timeUs[0], t.timeUs[last]);
}

void MainWindow::updateTimelineProcessSeries() {
    // the session panel has the series of the current document's device (empty without a session)
    QDockWidget* timelineDock = dock(QStringLiteral("timeline"));
    if (auto* timeline = timelineDock ? qobject_cast<views::TimelineView*>(timelineDock->widget()) : nullptr)
        timeline->setProcessSeries(m_sessionPanel->nvmlSeries());
}

void MainWindow::syncSessionGraphs(views::SnapshotDocument* doc) {
    syncGraphScans(doc);
    showGraphDocks(dock(QStringLiteral("graphs")), dock(QStringLiteral("graph")), doc, m_docksShown);
}

void MainWindow::setPollInterval(int ms) { m_poll->setInterval(ms); }

void MainWindow::pollSession() {
    views::SnapshotDocument* doc = currentDocument();
    SessionState* session = SessionState::of(doc);
    if (!session) {
        m_poll->stop();
        return;
    }
    // the SQLite reads (and parsing new graph scans) run off the GUI thread; a session still
    // being polled is not polled again
    QPointer<views::SnapshotDocument> polled(doc);
    session->poll(
        [this, polled](const SessionState::Polled& p) {
            if (polled) sessionPolled(polled, p);
        },
        [this, polled](const QString& message) {
            if (!polled || polled != currentDocument()) return;
            m_poll->stop();
            m_banner->showError(message);
        });
}

void MainWindow::sessionPolled(views::SnapshotDocument* doc, const SessionState::Polled& p) {
    SessionState* session = SessionState::of(doc);
    if (!session) return;
    // following the end (the last iteration selected, or none yet): the newest iteration and
    // snapshot are shown as they come
    const bool following = p.atEnd;
    const model::SessionFile::Update& u = p.update;
    const auto& its = session->file().iterations();
    const bool moved = following && u.iterations > 0;
    if (moved) session->setIteration(its.back().index);
    if (doc != currentDocument()) return;  // the rows are in; the tab shows them when current
    if (u.any()) {
        m_sessionPanel->refresh();
        if (u.samples > 0) updateTimelineProcessSeries();
        if (u.graphScans > 0 || moved) syncSessionGraphs(doc);
    }
    // a new snapshot once no other load runs (each snapshot tried once)
    const auto& snaps = session->file().snapshots();
    const bool pending = (following || session->snapshotId() == 0) && !snaps.empty() &&
                         snaps.back().id != session->snapshotId() &&
                         !(m_followPath == doc->path() && m_followSnapshot == snaps.back().id);
    if (pending && !isLoading()) {
        m_followPath = doc->path();
        m_followSnapshot = snaps.back().id;
        loadSessionSnapshot(doc, snaps.back().id, snaps.back().iteration);
        m_followGeneration = m_sessionGeneration;
    }
    if (!session->file().live() && !pending) m_poll->stop();
}

void MainWindow::stepIteration(int delta) {
    SessionState* session = SessionState::of(currentDocument());
    if (!session) return;
    const auto& its = session->file().iterations();
    if (its.empty()) return;
    size_t i = 0;
    while (i < its.size() && its[i].index != session->iteration()) ++i;
    int64_t target;
    if (i == its.size()) target = delta > 0 ? its.front().index : its.back().index;
    else if (delta > 0 && i + 1 < its.size()) target = its[i + 1].index;
    else if (delta < 0 && i > 0) target = its[i - 1].index;
    else {
        statusBar()->showMessage(delta > 0 ? tr("This is the last iteration.") : tr("This is the first iteration."), 4000);
        return;
    }
    selectIteration(target);
}

void MainWindow::selectIteration(int64_t index) {
    views::SnapshotDocument* doc = currentDocument();
    SessionState* session = SessionState::of(doc);
    if (!session) return;
    const model::SessionSnapshot* snap = session->snapshotOfIteration(index);
    if (snap && snap->id != session->snapshotId()) {
        loadSessionSnapshot(doc, snap->id, index);
        return;
    }
    session->setIteration(index);
    m_sessionPanel->refresh();
    syncSessionGraphs(doc);
    if (!snap) statusBar()->showMessage(tr("Iteration %1 has no allocator snapshot; the views still show snapshot %2.")
                                            .arg(index).arg(session->snapshotId()), 5000);
}

void MainWindow::setDocksShown(bool shown) {
    if (shown == m_docksShown) return;
    m_docksShown = shown;
    if (!shown) {
        m_hiddenDocksState = saveState(kLayoutVersion);
        for (Dock& d : m_docks) d.dock->hide();
        m_sessionDock->hide();
        m_start->show();
    } else {
        m_start->hide();
        restoreState(m_hiddenDocksState, kLayoutVersion);
        if (!m_pendingView.isEmpty()) raiseView(std::exchange(m_pendingView, QString()));
    }
    m_viewMenu->setEnabled(shown);
}

void MainWindow::closeDocument(int tab) {
    if (tab < 0 || tab >= m_documents.size()) return;
    views::SnapshotDocument* doc = m_documents.takeAt(tab);
    for (Dock& d : m_docks) d.view.setDocument(nullptr);
    m_tabs->removeTab(tab);  // shows the next tab, if any
    if (m_documents.isEmpty()) showDocument(-1);
    doc->deleteLater();
}

void MainWindow::updateDevices() {
    const QSignalBlocker block(m_devices);
    m_devices->clear();
    views::SnapshotDocument* doc = currentDocument();
    if (doc) {
        QVector<int> devices = doc->devices();
        // the GPUs, then the pinned host memory (torch 2.14's host_segments / host_traces)
        std::stable_partition(devices.begin(), devices.end(), [](int d) { return d != model::kHostDevice; });
        for (int d : devices) {
            const auto* data = doc->snapshot().device(d);
            const qlonglong entries = data ? static_cast<qlonglong>(data->trace.rows()) : 0;
            m_devices->addItem(tr("%1 (%2 entries)")
                                   .arg(QString::fromStdString(model::deviceLabel(d)), QLocale::system().toString(entries)),
                               d);
            if (d == model::kHostDevice)
                m_devices->setItemData(m_devices->count() - 1,
                                       tr("Pinned host memory of torch's CUDA host allocator (record_pinned_host_memory=True)"),
                                       Qt::ToolTipRole);
        }
        m_devices->setCurrentIndex(m_devices->findData(doc->device()));
    }
    m_devices->setEnabled(m_devices->count() > 1);
    if (m_devices->count() == 0) m_devices->addItem(doc ? tr("no device") : tr("—"));
}

void MainWindow::updateStatus() {
    views::SnapshotDocument* doc = currentDocument();
    if (!doc || doc->entryCount() == 0) {
        m_entryStatus->setText(doc ? tr("no trace entries on this device") : QString());
        return;
    }
    const int64_t i = doc->currentEvent();
    if (i < 0) {
        m_entryStatus->setText(tr("before the first entry"));
        return;
    }
    const auto& trace = doc->deviceData().trace;
    const auto& tl = doc->timeline();
    const QLocale loc = QLocale::system();
    m_entryStatus->setText(tr("Entry %1 of %2: %3 %4 · live %5 · reserved %6")
                               .arg(loc.toString(static_cast<qlonglong>(i)), loc.toString(static_cast<qlonglong>(doc->entryCount())),
                                    QString::fromLatin1(model::actionName(trace.action[static_cast<size_t>(i)])),
                                    views::formatBytes(static_cast<double>(trace.size[static_cast<size_t>(i)])),
                                    views::formatBytes(static_cast<double>(tl.liveBytes[static_cast<size_t>(i)])),
                                    views::formatBytes(static_cast<double>(tl.reservedBytes[static_cast<size_t>(i)])))
                           // the histories come after the first picture: entries can be picked once they are built
                           + (doc->isRewinding() ? tr(" · rewinding the allocator state\u2026") : QString()));
}

void MainWindow::attachDialog() {
    QSet<qint64> attached;
    if (m_attach) attached.insert(m_attach->targetPid());
    AttachDialog dialog(attached, this);
    if (dialog.exec() != QDialog::Accepted) return;
    if (!dialog.selectedPath().isEmpty()) openFiles({dialog.selectedPath()});
    else if (dialog.selectedPid() > 0) attachTo(dialog.selectedPid());
}

void MainWindow::setAttachCommand(const QString& program, const QStringList& leadingArgs) {
    m_attachProgram = program;
    m_attachArgs = leadingArgs;
}

qint64 MainWindow::attachedPid() const { return m_attach ? m_attach->targetPid() : 0; }

qint64 MainWindow::attachProcessId() const { return m_attach ? m_attach->processId() : 0; }

void MainWindow::attachTo(qint64 pid, const QString& output) {
    if (m_attach) {
        m_banner->showError(tr("memlens is attached to process %1 already: File > Detach first.").arg(m_attach->targetPid()));
        return;
    }
    const QString program = m_attachProgram.isEmpty() ? AttachProcess::findCli() : m_attachProgram;
    if (program.isEmpty()) {
        m_banner->showError(tr("memlens-cli was not found beside memlens (%1) or on PATH: it attaches to processes.")
                                .arg(QCoreApplication::applicationDirPath()));
        return;
    }
    const QString out =
        output.isEmpty()
            ? AttachProcess::freshOutput(m_attachDirectory.isEmpty() ? AttachProcess::defaultDirectory() : m_attachDirectory, pid)
            : output;
    m_attach = new AttachProcess(program, m_attachArgs, pid, out, this);
    connect(m_attach, &AttachProcess::attached, this, [this, pid](const QString& path) {
        statusBar()->showMessage(tr("Attached to process %1: recording into %2").arg(pid).arg(path));
        openFiles({path});
    });
    connect(m_attach, &AttachProcess::finished, this, &MainWindow::attachFinished);
    m_detach->setEnabled(true);
    m_detach->setToolTip(tr("Stop recording process %1 (into %2); the job keeps running").arg(pid).arg(out));
    statusBar()->showMessage(tr("Attaching to process %1: recording into %2").arg(pid).arg(out));
    m_attach->start();
}

void MainWindow::detach() {
    if (!m_attach || !m_attach->isRunning()) return;
    m_attach->detach();
    m_detach->setEnabled(false);
    statusBar()->showMessage(tr("Detaching from process %1…").arg(m_attach->targetPid()));
}

void MainWindow::attachFinished(const QString& error) {
    AttachProcess* done = m_attach;
    m_attach = nullptr;
    m_detach->setEnabled(false);
    m_detach->setToolTip(tr("Stop recording the attached process; the job keeps running"));
    if (!done) return;
    done->deleteLater();
    if (!error.isEmpty()) m_banner->showError(error);
    else
        statusBar()->showMessage(
            tr("Detached from process %1, which keeps running; its session is %2").arg(done->targetPid()).arg(done->output()));
}

void MainWindow::updateTitle() {
    views::SnapshotDocument* doc = currentDocument();
    setWindowTitle(doc ? tr("%1 — memlens").arg(doc->fileName()) : tr("memlens"));
}

void MainWindow::closeEvent(QCloseEvent* event) {
    // attached: detach (the job keeps running) and wait, boundedly, for the CLI to finish the session
    if (m_attach && !m_attach->detachAndWait(10000))
        qWarning("memlens: memlens-cli attach %lld did not end within 10 s of SIGINT", m_attach->targetPid());
    m_queue.clear();
    m_loader->cancel();
    m_sessions->cancel();
    m_poll->stop();
    saveLayout();
    event->accept();
}

void MainWindow::dragEnterEvent(QDragEnterEvent* event) {
    if (!localFiles(event->mimeData()).isEmpty()) event->acceptProposedAction();
}

void MainWindow::dropEvent(QDropEvent* event) {
    const QStringList files = localFiles(event->mimeData());
    if (files.isEmpty()) return;
    event->acceptProposedAction();
    openFiles(files);
}

} // namespace memlens::gui
