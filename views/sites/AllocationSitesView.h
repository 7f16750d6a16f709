#pragma once
// Live bytes grouped by allocation stack, as bottom-up and top-down trees (two tabs), either at
// the current trace entry or over the document's selected range of entries, with a search box
// and a switch for C++ frames. The trees are built off the GUI thread (a JobTracker job); a
// newer request supersedes an older one. Selecting a node selects its heaviest stack.
#include "memlens/model/AllocationSites.h"
#include "document/JobTracker.h"

#include <QPointer>
#include <QWidget>

#include <functional>
#include <memory>

class QCheckBox;
class QLabel;
class QLineEdit;
class QRadioButton;
class QSortFilterProxyModel;
class QTabWidget;
class QTimer;
class QTreeView;

namespace memlens::views {

class AllocationSitesModel;
class SnapshotDocument;

class AllocationSitesView : public QWidget {
    Q_OBJECT
public:
    enum class Mode { CurrentEntry, SelectedRange };

    explicit AllocationSitesView(QWidget* parent = nullptr);
    ~AllocationSitesView() override;
    void setDocument(SnapshotDocument* doc);
    SnapshotDocument* document() const { return m_doc; }

    Mode mode() const;
    void setMode(Mode mode);
    void setShowNativeFrames(bool show);
    void setSearchText(const QString& text);  // applied after a short pause, as typed text is

    AllocationSitesModel* bottomUpModel() const { return m_bottomUp; }
    AllocationSitesModel* topDownModel() const { return m_topDown; }
    QSortFilterProxyModel* bottomUpProxy() const { return m_bottomUpProxy; }
    QSortFilterProxyModel* topDownProxy() const { return m_topDownProxy; }
    QTreeView* bottomUpTree() const { return m_bottomUpTree; }
    QTreeView* topDownTree() const { return m_topDownTree; }
    QString statusText() const;
    bool isBusy() const { return m_jobs.isRunning(); }
    // For tests: processes events until the trees being built are in.
    bool waitForSites(int timeoutMs = 60000) const { return m_jobs.waitForIdle(timeoutMs); }
    // For tests: runs on the worker before each build (it may throw, as a build may).
    void setBuildHookForTests(std::function<void()> hook) { m_buildHook = std::move(hook); }

    // What the trees were asked for: live at an entry, or allocated in a range of entries.
    struct Request {
        enum class Kind { AtEntry, InRange } kind = Kind::AtEntry;
        int64_t entry = -1;              // AtEntry (-1: before the first entry)
        int64_t first = 0, last = -1;    // InRange
    };

signals:
    // New trees are in the models.
    void sitesUpdated();

protected:
    void resizeEvent(QResizeEvent* event) override;

private:
    void request();
    void apply(std::shared_ptr<const model::AllocationSites> sites, const Request& request);
    void failed(const QString& message);
    void selectionChanged();
    void nodeActivated(const QModelIndex& proxyIndex);
    QTreeView* makeTree(QSortFilterProxyModel* proxy);
    void expandHeaviest(QTreeView* tree);

    QPointer<SnapshotDocument> m_doc;
    AllocationSitesModel* m_bottomUp = nullptr;
    AllocationSitesModel* m_topDown = nullptr;
    QSortFilterProxyModel* m_bottomUpProxy = nullptr;
    QSortFilterProxyModel* m_topDownProxy = nullptr;
    QTreeView* m_bottomUpTree = nullptr;
    QTreeView* m_topDownTree = nullptr;
    QTabWidget* m_tabs = nullptr;
    QRadioButton* m_atEntry = nullptr;
    QRadioButton* m_inRange = nullptr;
    QCheckBox* m_native = nullptr;
    QLineEdit* m_search = nullptr;
    QTimer* m_searchTimer = nullptr;
    QLabel* m_status = nullptr;

    std::function<void()> m_buildHook;
    JobTracker m_jobs{this, JobPriority::Background};
};

} // namespace memlens::views
