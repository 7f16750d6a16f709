#pragma once
// Live bytes grouped by allocation stack, as bottom-up and top-down trees (two tabs), either at
// the current trace entry or over the document's selected range of entries, with a search box
// and a switch for C++ frames. The trees are built off the GUI thread; a newer request
// supersedes an older one (generation ids). Selecting a node selects its heaviest stack.
#include "memlens/model/AllocationSites.h"

#include <QPointer>
#include <QThreadPool>
#include <QWidget>

#include <atomic>
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
    bool isBusy() const { return m_pending; }

signals:
    // New trees are in the models.
    void sitesUpdated();

protected:
    void resizeEvent(QResizeEvent* event) override;

private:
    void request();
    void apply(quint64 generation, std::shared_ptr<const model::AllocationSites> sites, QString status);
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

    QThreadPool m_pool;
    quint64 m_generation = 0;
    std::shared_ptr<std::atomic<bool>> m_cancel;
    bool m_pending = false;
};

} // namespace memlens::views
