#pragma once
// Paints what lies over the timeline's data: annotation ranges in lanes above the plot (iterations,
// optimizer steps...), oom and snapshot entries as labelled vertical lines, the selected range,
// the range being dragged, and the current entry.
#include "core/EntryAxis.h"
#include "core/TimelineMarkers.h"

#include "timeline/QCustomPlotInclude.h"

#include <optional>
#include <vector>
#include <utility>

namespace memlens::views {

class TimelineOverlayItem : public QCPAbstractItem {
public:
    static constexpr int kLaneHeight = 15;
    static constexpr int kMaxLanes = 3;

    explicit TimelineOverlayItem(QCustomPlot* plot);

    // Neither is copied; both must outlive their use here.
    void setMarkers(const TimelineMarkers* markers, const EntryAxis* axis);
    void setCurrent(int64_t entry) { m_current = entry; }
    void setSelection(std::optional<std::pair<int64_t, int64_t>> entries) { m_selection = entries; }
    // A range being dragged, in x coordinates.
    void setDrag(std::optional<std::pair<double, double>> xs) { m_drag = xs; }
    // Height above the axis rect that the lanes need.
    int lanesHeight() const;

    double selectTest(const QPointF& pos, bool onlySelectable, QVariant* details = nullptr) const override;

protected:
    void draw(QCPPainter* painter) override;

private:
    void drawLanes(QCPPainter* painter, const QRect& area, QCPAxis* x);
    void drawPoints(QCPPainter* painter, const QRect& area, QCPAxis* x);
    void drawSpan(QCPPainter* painter, const QRect& area, double px0, double px1, bool dashed);

    const TimelineMarkers* m_markers = nullptr;
    const EntryAxis* m_axis = nullptr;
    int64_t m_current = -1;
    std::optional<std::pair<int64_t, int64_t>> m_selection;
    std::optional<std::pair<double, double>> m_drag;
    std::vector<int> m_nameWidths;  // per range, its name's width in pixels (-1: not measured yet)
};

} // namespace memlens::views
