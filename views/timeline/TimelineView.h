#pragma once
// The Active Memory Timeline of the document's device: live and reserved bytes over the trace,
// the largest allocations as stacked bands (the rest in one "other" band), annotation ranges,
// oom and snapshot entries, the selected range and the current entry; for a session, what
// nvidia-smi showed meanwhile.
//
// Mouse: hover shows the allocation under the cursor; click makes that entry current (and selects
// the allocation); drag selects a range; wheel zooms; right or middle drag, or shift+wheel, pans;
// a right click offers zoom to the selection, back and clear.
#include "memlens/model/MemoryCategory.h"
#include "memlens/model/ProcessSeries.h"
#include "memlens/model/WhatIf.h"
#include "core/EntryAxis.h"
#include "core/ProcessSamplesPlacement.h"
#include "core/StackAggregates.h"
#include "core/TimelineLayout.h"

#include <QPointer>
#include <QTimer>
#include <QWidget>

#include <optional>
#include <vector>

class QComboBox;
class QCPGraph;
class QCPRange;
class QCustomPlot;
class QLabel;
class QMouseEvent;
class QCheckBox;
class QSpinBox;
class QToolButton;
class QWheelEvent;

namespace memlens::views {

class ByteAxisTicker;
class EntryAxisTicker;
class PlaceholderPages;
class SnapshotDocument;
class TimelineBandsItem;
class TimelineOverlayItem;

class TimelineView : public QWidget {
    Q_OBJECT
public:
    explicit TimelineView(QWidget* parent = nullptr);
    ~TimelineView() override;

    void setDocument(SnapshotDocument* doc);
    SnapshotDocument* document() const;

    // x axis: trace entry index (default) or time since the first entry, when every entry has a
    // time and times never go back.
    bool timeAxisAvailable() const;
    bool timeAxis() const { return m_axis.isTime(); }
    void setTimeAxis(bool time);
    // How many allocations get a band of their own: those that cover the most of the visible range
    // (bytes x time, AllocationLifetimes::mostVisible), chosen again 150 ms after the range last
    // changed, so that zooming in brings the allocations that matter there; the rest are summed
    // in the grey band.
    int largestCount() const { return m_largest; }
    void setLargestCount(int n);
    // Chooses the banded allocations for the current range now (what the timer does).
    void chooseBands();
    // The banded allocations' widths add up to at most this many plot widths
    // (AllocationLifetimes::mostVisible): a bound on the strokes per pixel column, whatever is
    // chosen. What is left is summed by call site (StackAggregates), so the bound can be tight:
    // at 100 a full-range redraw of a 2 GB trace took 26 ms (15,000 bands), at 25 17 ms.
    static constexpr double kMaxBandCover = 25.0;
    // And at most this many banded allocations per pixel column of the plot, whatever the count
    // asked for (largestCount): a band costs at least one stroke, and at the overview of a long
    // trace thousands of them are each narrower than a pixel. On a 4 GB trace 15,000 bands (the
    // count's default) made a full-range redraw 25 ms; 4,512 on a 1,504-pixel plot, 17 ms.
    static constexpr int kMaxBandsPerPixel = 3;
    // Indices into the document's lifetimes that have a band, ascending.
    const std::vector<uint32_t>& bandedLifetimes() const { return m_chosen; }
    // The stacks whose other allocations are drawn summed, one band each (for tests and benches).
    const StackAggregates& stackGroups() const { return m_groups; }
    // Allocations coloured by memory category (parameters, gradients, optimizer state, saved for
    // backward, inputs, other; estimated from their stacks) instead of by call site.
    void setColourByCategory(bool on);
    bool coloursByCategory() const { return m_byCategory; }
    QString legendText() const;
    // The note above the plot about what the trace lacks (a ring buffer that overflowed); empty when none.
    QString noticeText() const;
    // The private pools drawn as their own reserved line, in order.
    int poolLineCount() const { return static_cast<int>(m_poolLines.size()); }

    // The visible x range (entries or microseconds since the first entry), clamped to the trace.
    void setXRange(double x0, double x1);
    std::pair<double, double> xRange() const;
    void fit();
    void zoomToSelection();

    // What nvidia-smi showed for the job on this device (a session's NVML samples), drawn over the
    // trace's span as a step line above reserved: the gap is the CUDA context, other libraries
    // and the caching allocator's overhead. Empty: not drawn.
    void setProcessSeries(std::vector<model::TimedBytes> series);
    // The samples as drawn (x in the current axis); empty when none fall in the trace's span.
    const std::vector<PlacedSample>& processSamples() const { return m_processPlaced; }

    // A what-if simulation's reserved and live bytes after some trace entries (model::whatIf's
    // series), drawn as dashed and dotted step lines over the recorded curves. Empty: not drawn.
    void setSimulatedSeries(std::vector<model::SeriesPoint> series);
    const std::vector<model::SeriesPoint>& simulatedSeries() const { return m_simulatedSeries; }
    QCPGraph* simulatedReservedGraph() const { return m_simReservedLine; }

    // Binning and replot now, painted when it returns (tests and the benchmark use it).
    void redraw();
    const TimelineLayout& layout() const { return m_layout; }
    QCustomPlot* plot() const { return m_plot; }

    // Under a point of the plot widget: the entry, the allocation (index into the document's
    // lifetimes(), TimelineBands::kOther or kNothing), and the text the hover shows.
    int64_t entryAt(const QPoint& plotPos) const;
    int64_t lifetimeAt(const QPoint& plotPos) const;
    int columnAt(const QPoint& plotPos) const;  // the layout's column under plotPos
    QString describeAt(const QPoint& plotPos) const;
    QString describeLifetime(int64_t lifetime) const;
    // The hover's lines for a stack: its useful frames, or "no stack recorded".
    QString stackHtml(model::StackId stack) const;

private:
    void buildToolbar(QWidget* bar);
    void setupPlot();
    void rebuild();
    void updateEmptyState();
    void updateProcessLine();
    void updateSimulatedLines();
    void updateLegend();
    void updateNotice();
    void updatePoolLines();
    void ensureLayout();
    void applyLayout();
    void scheduleReplot();
    void showEntry(int64_t entry);
    int plotWidth() const;
    double minimumSpan() const;

    void onMousePress(QMouseEvent* event);
    void onMouseMove(QMouseEvent* event);
    void onMouseRelease(QMouseEvent* event);
    void onWheel(QWheelEvent* event);
    void showContextMenu(const QPoint& globalPos);
    bool eventFilter(QObject* watched, QEvent* event) override;

    QPointer<SnapshotDocument> m_doc;
    QComboBox* m_xMode = nullptr;
    QSpinBox* m_largestBox = nullptr;
    QCheckBox* m_categoryBox = nullptr;
    bool m_byCategory = false;
    std::vector<model::StackRole> m_roles;  // of the document's snapshot, while colouring by category
    const model::Snapshot* m_rolesOf = nullptr;
    QToolButton* m_zoomSelection = nullptr;
    QLabel* m_legend = nullptr;
    QLabel* m_notice = nullptr;  // what the trace lacks: "the trace starts mid-run"
    std::vector<QCPGraph*> m_poolLines;  // reserved bytes of each private pool
    PlaceholderPages* m_pages = nullptr;
    QCustomPlot* m_plot = nullptr;
    QCPGraph* m_reservedFill = nullptr;
    QCPGraph* m_reservedLine = nullptr;
    QCPGraph* m_liveLine = nullptr;
    QCPGraph* m_processLine = nullptr;
    QCPGraph* m_simReservedLine = nullptr;
    QCPGraph* m_simLiveLine = nullptr;
    std::vector<model::SeriesPoint> m_simulatedSeries;
    std::vector<model::TimedBytes> m_processSeries;
    std::vector<PlacedSample> m_processPlaced;
    TimelineBandsItem* m_bands = nullptr;
    TimelineOverlayItem* m_overlay = nullptr;
    QSharedPointer<EntryAxisTicker> m_xTicker;

    EntryAxis m_axis;
    std::vector<uint32_t> m_chosen;
    StackAggregates m_groups;  // what is not chosen, summed by stack (at the overview of long traces)
    int m_largest = 15000;  // as PyTorch's viewer's default
    QTimer* m_chooseTimer = nullptr;
    std::pair<double, double> m_chosenFor{0, -1};  // the range m_chosen was chosen for (empty: none)
    int m_chosenCount = 0;                         // ... and how many it could take
    TimelineLayout m_layout;
    bool m_dirty = true;
    double m_layoutX0 = 0, m_layoutX1 = 0;
    int m_layoutWidth = -1;

    enum class Drag { None, Pending, Select, Pan };
    Drag m_drag = Drag::None;
    QPoint m_pressPos;
    double m_pressX = 0;
    std::pair<double, double> m_pressRange;
    int64_t m_hovered = -1;
};

} // namespace memlens::views
