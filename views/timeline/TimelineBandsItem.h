#pragma once
// Paints a TimelineLayout's allocation bands into the plot: one raster column per pixel column,
// so its cost is bounded by the plot's size, not by the number of allocations or entries.
#include "memlens/model/MemoryCategory.h"
#include "memlens/model/Snapshot.h"
#include "core/TimelineLayout.h"

#include "timeline/QCustomPlotInclude.h"

#include <unordered_map>
#include <vector>

namespace memlens::views {

class TimelineBandsItem : public QCPAbstractItem {
public:
    explicit TimelineBandsItem(QCustomPlot* plot);

    // The layout is not copied; it must stay alive until the next setLayout.
    void setLayout(const TimelineLayout* layout, const AllocationLifetimes* lifetimes);
    // Bands of allocations from this stack are drawn in full colour and the others faded (0: none).
    void setHighlightedStack(model::StackId stack);
    // Colours by memory category (the role of each allocation's stack, index = StackId) instead of
    // by call site; null: by call site. The vector must stay alive until the next call.
    void setCategoryRoles(const std::vector<model::StackRole>* roles);
    static QColor categoryColor(model::MemoryCategory c);
    // The band under the mouse is drawn darker (-1: none).
    void setHoveredLifetime(int64_t lifetime) { m_hovered = lifetime; }

    // A band's colour: by call site (stack), varied a little per allocation.
    static QColor colorFor(model::StackId stack, uint32_t lifetime);
    static QColor otherColor();

    double selectTest(const QPointF& pos, bool onlySelectable, QVariant* details = nullptr) const override;

protected:
    void draw(QCPPainter* painter) override;

private:
    QRgb colorOf(uint32_t lifetime);

    const TimelineLayout* m_layout = nullptr;
    const AllocationLifetimes* m_lifetimes = nullptr;
    model::StackId m_highlightStack = 0;
    const std::vector<model::StackRole>* m_roles = nullptr;
    int64_t m_hovered = -1;
    // The colours of the lifetimes drawn as bands, as drawn now; reset with the lifetimes, the roles
    // or the highlight. Only the bands' (at most a few tens of thousands), not one for each of the
    // millions of lifetimes of a long trace (9.6 MB for 2.4 million).
    std::unordered_map<uint32_t, QRgb> m_colors;
    size_t m_lifetimeCount = 0;  // of m_lifetimes when the colours were reset
    QImage m_image;
};

} // namespace memlens::views
