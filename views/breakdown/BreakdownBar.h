#pragma once
// One stacked horizontal bar of a memory breakdown, a segment per part in proportion to its
// bytes, labelled where there is room; a tick where PyTorch's reserved memory ends and, when the
// process total is known, where nvidia-smi's figure ends. Without process figures a hatched tail
// stands for what a snapshot cannot see.
#include "memlens/model/MemoryBreakdown.h"

#include <QWidget>

#include <vector>

namespace memlens::views {

class BreakdownBar : public QWidget {
    Q_OBJECT
public:
    explicit BreakdownBar(QWidget* parent = nullptr);

    void setBreakdown(const model::MemoryBreakdown& breakdown);
    void clear();
    // The segment rectangles of the last layout, one per part (empty parts are zero wide), then
    // the unknown tail if drawn; for tests.
    std::vector<QRect> partRects() const;
    int partAt(QPoint p) const;  // index into the breakdown's parts, -1 for none or the tail

    QSize sizeHint() const override;
    QSize minimumSizeHint() const override;

protected:
    void paintEvent(QPaintEvent* event) override;
    bool event(QEvent* event) override;

private:
    QRect barRect() const;

    model::MemoryBreakdown m_breakdown;
    bool m_empty = true;
};

} // namespace memlens::views
