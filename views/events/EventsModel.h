#pragma once
// The trace entries of the document's device as a table: index, time, action, address, size, user
// metadata, compile context and top frame. Rows are computed when asked for, from the trace's columns: the model holds only
// which entries it shows (a range, or a list built by a filter), never a row per entry. And it
// gives the table at most windowRows() of them at a time (262,144 by default), a window the view
// moves as the user scrolls past either end or the current entry leaves it: a table keeps 8 bytes
// per row in its vertical header (QHeaderView's sections), which was 26 MB for the 3.2 million
// entries of a 600 MB trace, and 170 MB for a 4 GB one.
#include "memlens/model/Snapshot.h"

#include <QAbstractTableModel>
#include <QFont>
#include <QPointer>

#include <cstdint>
#include <vector>

namespace memlens::views {

class SnapshotDocument;

class EventsModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column {
        IndexColumn,
        TimeColumn,
        ActionColumn,
        AddressColumn,
        SizeColumn,
        MetadataColumn,        // user_metadata (torch.cuda.memory._set_memory_metadata)
        CompileContextColumn,  // compile_context ("Torch-Compiled Region: 0/0"); empty for 'N/A'
        FrameColumn,
        ColumnCount
    };
    enum Role { EntryRole = Qt::UserRole + 1, SortValueRole };

    explicit EventsModel(QObject* parent = nullptr);

    // Shows every entry of the document's device (nullptr: nothing).
    void setDocument(SnapshotDocument* doc);
    SnapshotDocument* document() const { return m_doc; }
    // Rows are the entries [first, last] (clamped to the trace).
    void setRange(int64_t first, int64_t last);
    // Rows are these entries, which must be ascending.
    void setEntries(std::vector<int64_t> entries);
    void showAll();

    int64_t entryCount() const;  // entries of the device, shown or not
    // The entries shown (in the range, or the filter's list); the rows are a window of them.
    int64_t shownCount() const;
    int64_t entryAt(int row) const;
    // The row that shows an entry, -1 if none does (not shown, or outside the window).
    int rowOf(int64_t entry) const;

    static constexpr int64_t kWindowRows = 262144;
    int64_t windowRows() const { return m_windowRows; }
    void setWindowRows(int64_t rows);  // tests: a small window
    // The index among the shown entries of the window's first row.
    int64_t windowFirst() const { return m_windowFirst; }
    // Moves the window (a model reset) so that it holds the entry, if it is shown at all: false
    // when it is not.
    bool showEntry(int64_t entry);
    // Moves the window by that many shown entries (clamped to them); false when it did not move.
    bool moveWindow(int64_t by);

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

private:
    const model::TraceColumns* trace() const;
    QString frameLabel(model::StackId stack) const;
    QString labelText(const model::SparseColumn<model::StringId>& column, size_t entry) const;
    QString frameTooltip(model::StackId stack) const;
    void resetFrames();
    int64_t shownIndexOf(int64_t entry) const;  // its index among the shown entries, -1 if not shown
    void setWindowFirst(int64_t first);

    QPointer<SnapshotDocument> m_doc;
    bool m_useList = false;
    int64_t m_first = 0;  // range mode: rows are m_first .. m_first + m_count - 1
    int64_t m_count = 0;
    std::vector<int64_t> m_entries;  // list mode
    int64_t m_windowFirst = 0;       // rows are the shown entries m_windowFirst ..
    int64_t m_windowRows = kWindowRows;
    int64_t m_timeOrigin = 0;
    mutable std::vector<QString> m_frameLabels;  // per stack, filled on demand
    mutable std::vector<uint8_t> m_frameKnown;
    QFont m_fixedFont;
    QFont m_boldFont;
};

} // namespace memlens::views
