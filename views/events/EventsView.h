#pragma once
// The trace entries of the document's device in a table, with a filter bar (action, size range,
// text in the top frame or address) and the document's selected range applied. Filtering long
// traces runs off the GUI thread; a newer filter supersedes a running one. Selecting a row makes
// its entry the current one; the current entry's row follows the document.
#include "core/EventFilter.h"
#include "document/JobTracker.h"

#include <QPointer>
#include <QWidget>

#include <memory>

class QComboBox;
class QLabel;
class QLineEdit;
class QTableView;
class QTimer;

namespace memlens::views {

class EventsModel;
class SnapshotDocument;

class EventsView : public QWidget {
    Q_OBJECT
public:
    // Longer traces are filtered on a worker thread.
    static constexpr int64_t kBackgroundRows = 200000;

    explicit EventsView(QWidget* parent = nullptr);
    ~EventsView() override;

    void setDocument(SnapshotDocument* doc);
    SnapshotDocument* document() const { return m_doc; }

    EventsModel* model() const { return m_model; }
    QTableView* table() const { return m_table; }
    // The filter the bar describes, with the document's selected range.
    EventFilter currentFilter() const;
    bool isFiltering() const { return m_jobs.isRunning(); }
    // For tests: processes events until the filter running on a worker is applied.
    bool waitForFilter(int timeoutMs = 60000) const { return m_jobs.waitForIdle(timeoutMs); }
    // Traces with more rows than this are filtered on a worker (kBackgroundRows; tests lower it).
    void setBackgroundRows(int64_t rows) { m_backgroundRows = rows; }

    // The filter bar, for tests and callers: an index of actionChoices(), sizes as typed
    // ("1 MiB"; empty: no bound), and the search text. Each applies the filter at once.
    static QStringList actionChoices();
    void setActionChoice(int index);
    void setSizeRange(const QString& min, const QString& max);
    void setSearchText(const QString& text);

signals:
    // The rows now match the filter bar and the selection.
    void filterApplied();

protected:
    void showEvent(QShowEvent* event) override;

private:
    void applyFilter();
    void updateLabelColumns();
    void install(std::vector<int64_t> rows, bool list, const EventFilter& filter);
    // A filter on a worker failed: no rows, and the one-line error in the count.
    void filterFailed(const QString& message);
    void updateCount();
    void followCurrent();
    void selectCurrent(bool scroll);  // the current entry's row, if the window holds it
    void onScrolled(int value);
    void onCurrentRowChanged(int row);

    QPointer<SnapshotDocument> m_doc;
    EventsModel* m_model = nullptr;
    QTableView* m_table = nullptr;
    QComboBox* m_action = nullptr;
    QLineEdit* m_minSize = nullptr;
    QLineEdit* m_maxSize = nullptr;
    QLineEdit* m_search = nullptr;
    QLabel* m_count = nullptr;
    QTimer* m_debounce = nullptr;
    int64_t m_backgroundRows = kBackgroundRows;
    QString m_error;  // the last filter's one-line error, shown until the next filter
    bool m_syncing = false;
    bool m_movingWindow = false;
    JobTracker m_jobs{this};
};

} // namespace memlens::views
