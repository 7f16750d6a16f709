#pragma once
// Every segment of the device right after the current trace entry, as strips of blocks coloured
// by state; a totals line (reserved, allocated, free, largest free block, fragmentation); at an
// `oom` entry, the verdict on why it failed. Hovering a block shows it and the top of its stack;
// clicking selects the allocation and goes to the entry that allocated it.
#include "memlens/model/OomVerdict.h"

#include <QPointer>
#include <QWidget>

#include <memory>
#include <optional>
#include <vector>

class QLabel;
class QScrollArea;
class QToolButton;

namespace memlens::views {

class PlaceholderPages;
class BlockMapCanvas;
class ColorLegend;
class SnapshotDocument;

class BlockMapView : public QWidget {
    Q_OBJECT
public:
    explicit BlockMapView(QWidget* parent = nullptr);
    void setDocument(SnapshotDocument* doc);
    SnapshotDocument* document() const { return m_doc; }

    // What the view shows, for tests and for the window's status bar.
    QString totalsText() const;
    QString verdictText() const;  // empty unless the current entry is an oom
    bool isShowingPlaceholder() const;
    BlockMapCanvas* canvas() const { return m_canvas; }

    // A state to draw instead of the document's while it is the state after the current entry
    // (a what-if simulation's, model::simulatedStateAfter), with a line saying what it is;
    // nullptr: the document's own.
    void setSimulatedState(std::shared_ptr<const model::DeviceState> state, const QString& label);
    bool isShowingSimulated() const;

    // The state with its segments grouped by pool: the default pool first, then each private
    // pool (CUDA graphs, MemPool), each in address order. st itself where it is so already.
    static std::shared_ptr<const model::DeviceState> groupedByPool(std::shared_ptr<const model::DeviceState> st);

protected:
    bool eventFilter(QObject* watched, QEvent* event) override;

private:
    void refresh();
    void deviceChanged();
    void blockClicked(uint32_t segment, uint32_t block);
    void showPlaceholder(const QString& text);
    void updateVerdict();
    void updateTotals();
    void updateScale();
    // The line about the blocks held by what the document marks (a selected retained graph).
    QString markedSentence(const model::DeviceState& st) const;

    QPointer<SnapshotDocument> m_doc;
    PlaceholderPages* m_pages = nullptr;
    QLabel* m_verdict = nullptr;
    QLabel* m_totals = nullptr;
    QLabel* m_scale = nullptr;
    QToolButton* m_fit = nullptr;
    QScrollArea* m_scroll = nullptr;
    BlockMapCanvas* m_canvas = nullptr;
    ColorLegend* m_legend = nullptr;
    std::vector<int64_t> m_ooms;  // oom entries of the current device
    std::optional<model::OomVerdict> m_verdictValue;
    bool m_selecting = false;
    std::shared_ptr<const model::DeviceState> m_simulated;
    QString m_simulatedLabel;
};

} // namespace memlens::views
