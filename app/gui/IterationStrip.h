#pragma once
// The iterations of a session as a strip of segments, one per iteration in time order, coloured
// by phase (train, eval, other); iterations with an allocator snapshot carry a dot; the selected
// iteration is outlined. A click selects an iteration. Drawn with at most one primitive per pixel
// column when iterations outnumber pixels.
#include "memlens/model/SessionData.h"

#include <QWidget>

class QPainter;

#include <vector>

namespace memlens::gui {

class IterationStrip : public QWidget {
    Q_OBJECT
public:
    explicit IterationStrip(QWidget* parent = nullptr);

    void setIterations(std::vector<model::SessionIteration> iterations, std::vector<int64_t> withSnapshot);
    void setCurrent(int64_t index);
    // Iterations to point out (a finding's): a red bar along their top edge. Empty: none.
    void setHighlighted(std::vector<int64_t> indices);
    const std::vector<int64_t>& highlighted() const { return m_highlighted; }
    int64_t current() const { return m_current; }
    int count() const { return static_cast<int>(m_iterations.size()); }
    int countOfPhase(const QString& phase) const;
    // The index of the iteration under x (widget coordinates), 0 when none.
    int64_t iterationAt(int x) const;
    static QColor phaseColor(const std::string& phase);

    QSize sizeHint() const override { return {400, 26}; }
    QSize minimumSizeHint() const override { return {60, 18}; }

signals:
    void iterationClicked(int64_t index);

protected:
    void paintEvent(QPaintEvent*) override;
    void mousePressEvent(QMouseEvent* event) override;
    bool event(QEvent* event) override;

private:
    QRectF segmentRect(size_t i) const;
    bool hasSnapshot(int64_t index) const;
    void paintSegments(QPainter& p) const;  // a rectangle per iteration, labelled where there is room
    void paintColumns(QPainter& p) const;   // a line per pixel column, when iterations outnumber pixels
    std::vector<model::SessionIteration> m_iterations;
    std::vector<int64_t> m_withSnapshot;  // sorted iteration indices
    int64_t m_current = 0;
    std::vector<int64_t> m_highlighted;  // sorted
};

} // namespace memlens::gui
