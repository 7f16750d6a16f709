#pragma once
// The memlens window: open files (menu, command line, drag and drop, recent files, the example),
// loaded off the GUI thread with progress and Cancel; one tab per file; the views as docks that
// follow the current tab; a device selector; stepping through the trace by keyboard.
#include "SessionLoader.h"
#include "ViewCatalog.h"

#include <QMainWindow>
#include <QPointer>

#include <memory>
#include <optional>
#include <utility>

class QComboBox;
class QDockWidget;
class QLabel;
class QMenu;
class QTabBar;
class QTimer;

namespace memlens::views {
class SnapshotDocument;
class SnapshotLoader;
struct LoadedSnapshot;
} // namespace memlens::views

namespace memlens::gui {

class AttachProcess;
class SelectionExport;
class ErrorBanner;
class IterationStrip;
class SessionLoader;
class SessionPanel;
struct SessionLoadResult;
class LoadProgressPanel;
class NavigationActions;
class RecentFiles;
class StartPage;

class MainWindow : public QMainWindow {
    Q_OBJECT
public:
    // persistent: read and write the settings (layout, recent files); automation passes false.
    explicit MainWindow(bool persistent = true, QWidget* parent = nullptr);
    ~MainWindow() override;

    // Opens the files one after the other; any load still running is cancelled first.
    void openFiles(const QStringList& paths);
    views::SnapshotDocument* currentDocument() const;
    int documentCount() const { return static_cast<int>(m_documents.size()); }
    bool isLoading() const;
    // Brings a view's dock to the front (names as in viewNames()).
    bool raiseView(const QString& name);
    QDockWidget* dock(const QString& name) const;
    QString bannerMessage() const;
    // The doctor's one line about the current document ("2 findings: ..."); empty when none.
    QString findingsBannerText() const;
    // Selects finding ROW of the Findings dock and its evidence in every view.
    void selectFinding(int row);
    // For tests and for callers that drive the window.
    NavigationActions* navigation() const { return m_nav; }
    QTabBar* tabs() const { return m_tabs; }
    QComboBox* deviceSelector() const { return m_devices; }
    views::SnapshotDocument* document(int tab) const { return m_documents.value(tab); }
    // Sessions (.memlens): the session panel (iteration strip, process plot) of the current tab.
    SessionPanel* sessionPanel() const { return m_sessionPanel; }
    QAction* nextIterationAction() const { return m_nextIteration; }
    QAction* previousIterationAction() const { return m_previousIteration; }
    // Selects iteration INDEX of the current session; loads its snapshot when it has one.
    void selectIteration(int64_t index);
    // How often a live session is polled for new rows (ms).
    void setPollInterval(int ms);

    // File > Attach to a process: `memlens-cli attach PID -o OUTPUT` in the background (OUTPUT
    // empty: a fresh file in attachDirectory()), its session opened and followed once it says it
    // attached; its one-line error in the banner when it fails. One process at a time.
    void attachTo(qint64 pid, const QString& output = QString());
    // File > Detach: the CLI takes its hooks out and finishes the session; the job keeps running.
    void detach();
    QAction* detachAction() const { return m_detach; }
    // The pid attached to (or being attached to), 0 when none; the CLI's own pid.
    qint64 attachedPid() const;
    qint64 attachProcessId() const;
    // For tests: the program run in place of memlens-cli (with LEADINGARGS before `attach`), and
    // the folder for attached sessions.
    void setAttachCommand(const QString& program, const QStringList& leadingArgs = {});
    void setAttachDirectory(const QString& dir) { m_attachDirectory = dir; }
    // File > Export Selection: the current document's selected range as a smaller snapshot, cut and
    // written on the job pool; a status message when done, the banner on an error.
    void exportSelectionTo(const QString& path);
    QAction* exportSelectionAction() const { return m_exportSelection; }
    SelectionExport* selectionExport() const { return m_export; }

signals:
    void documentOpened(memlens::views::SnapshotDocument* doc);
    void openFailed(const QString& path, const QString& message);

protected:
    void closeEvent(QCloseEvent* event) override;
    void dragEnterEvent(QDragEnterEvent* event) override;
    void dropEvent(QDropEvent* event) override;

private:
    struct Dock {
        ViewInfo info;
        QDockWidget* dock = nullptr;
        ViewHandle view;
    };

    void createTopPanel();
    void createActions();
    void createToolBar();
    void createDocks();
    void connectWhatIf();
    void connectFindings();
    void updateFindingsBanner();
    void arrangeDefaultLayout();
    void restoreLayout();
    void saveLayout() const;
    void rebuildRecentMenu();
    void openDialog();
    void exportSelection();
    void updateExportAction();
    void attachDialog();
    void attachFinished(const QString& error);

    void startNextLoad();
    void onProgress(quint64 generation, const QString& phase, double fraction);
    void onLoaded(quint64 generation, std::shared_ptr<const views::LoadedSnapshot> loaded);
    void onFailed(quint64 generation, const QString& path, const QString& message);
    void cancelLoading();
    // The one-line banner and openFailed() for a file that could not be read; then the next file.
    void loadFailed(const QString& path, const QString& message);
    // Loads snapshot SNAPSHOTID of DOC's session into DOC's tab, selecting ITERATION.
    void loadSessionSnapshot(views::SnapshotDocument* doc, int64_t snapshotId, int64_t iteration);
    void onSessionLoaded(quint64 generation, std::shared_ptr<SessionLoadResult> result);
    void acceptDocument(views::SnapshotDocument* doc);
    void stepIteration(int delta);
    // Live following: polls the current session (off the GUI thread); sessionPolled() takes the
    // outcome on the GUI thread.
    void pollSession();
    void sessionPolled(views::SnapshotDocument* doc, const SessionState::Polled& polled);
    void updateSession();
    // What nvidia-smi showed (the session's NVML samples for the document's device) on the timeline.
    void updateTimelineProcessSeries();
    // The first and last trace entry's times of DOC's device, when both are known.
    static std::optional<std::pair<int64_t, int64_t>> traceSpan(const views::SnapshotDocument* doc);
    // The retained-graph docks after the session grew or another iteration was selected.
    void syncSessionGraphs(views::SnapshotDocument* doc);

    void addDocument(views::SnapshotDocument* doc);
    void showDocument(int tab);
    void closeDocument(int tab);
    void updateDevices();
    void updateStatus();
    void updateTitle();
    void setDocksShown(bool shown);

    bool m_persistent;
    views::SnapshotLoader* m_loader = nullptr;
    SessionLoader* m_sessions = nullptr;
    quint64 m_sessionGeneration = 0;
    SessionPanel* m_sessionPanel = nullptr;
    QDockWidget* m_sessionDock = nullptr;
    bool m_sessionDockSized = false;
    QAction* m_nextIteration = nullptr;
    QAction* m_previousIteration = nullptr;
    QTimer* m_poll = nullptr;
    // the snapshot last loaded because a followed session wrote it (not tried twice)
    QString m_followPath;
    int64_t m_followSnapshot = 0;
    quint64 m_followGeneration = 0;
    RecentFiles* m_recent = nullptr;
    NavigationActions* m_nav = nullptr;
    ErrorBanner* m_banner = nullptr;
    QLabel* m_findingsBanner = nullptr;
    LoadProgressPanel* m_progress = nullptr;
    StartPage* m_start = nullptr;
    QTabBar* m_tabs = nullptr;
    QComboBox* m_devices = nullptr;
    QLabel* m_entryStatus = nullptr;
    QMenu* m_viewMenu = nullptr;
    QMenu* m_recentMenu = nullptr;
    QAction* m_closeTab = nullptr;
    QAction* m_exportSelection = nullptr;
    SelectionExport* m_export = nullptr;
    AttachProcess* m_attach = nullptr;
    QAction* m_detach = nullptr;
    QString m_attachProgram;  // empty: memlens-cli beside this program
    QStringList m_attachArgs;
    QString m_attachDirectory;  // empty: AttachProcess::defaultDirectory()
    QList<Dock> m_docks;
    QList<views::SnapshotDocument*> m_documents;  // in tab order
    QPointer<views::SnapshotDocument> m_shownDocument;  // the one the views were last given
    QStringList m_queue;
    quint64 m_generation = 0;
    QByteArray m_defaultState;
    // While no file is open the docks are hidden behind the start page; this is their layout.
    QByteArray m_hiddenDocksState;
    bool m_docksShown = true;
    QString m_pendingView;
};

} // namespace memlens::gui
