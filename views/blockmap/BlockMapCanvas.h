#pragma once
// The painted part of the block map: segment strips wrapped into rows, blocks coloured by state,
// the largest free block outlined, the hovered and selected blocks marked. Geometry comes from
// BlockMapLayout; the canvas only paints it and maps the mouse back to blocks.
#include "memlens/model/AllocatorState.h"
#include "memlens/model/Snapshot.h"
#include "core/BlockMapLayout.h"

#include <QWidget>

#include <memory>
#include <optional>

namespace memlens::views {

class BlockMapCanvas : public QWidget {
    Q_OBJECT
public:
    explicit BlockMapCanvas(QWidget* parent = nullptr);

    void setState(std::shared_ptr<const model::DeviceState> state, std::shared_ptr<const model::Snapshot> snapshot);
    const model::DeviceState* state() const { return m_state.get(); }
    // The layout at the canvas's current size (computed here if it is out of date).
    const BlockMapLayout& layout() {
        ensureLayout();
        return m_layout;
    }

    // The height the map fits into at zoom 1 (the scroll area's viewport).
    void setFitHeight(int height);
    double zoom() const { return m_zoom; }
    void setZoom(double zoom);

    // The block drawn as selected, by address (it stays selected while the state changes).
    void setSelectedAddress(std::optional<uint64_t> address);
    std::optional<uint64_t> selectedAddress() const { return m_selectedAddress; }
    // Blocks outlined as held by something (addresses ascending; a block is marked when one of
    // them falls inside it and it is not free).
    void setMarkedAddresses(std::vector<uint64_t> addresses);
    const std::vector<std::pair<uint32_t, uint32_t>>& markedBlocks() const { return m_markedBlocks; }

    QSize sizeHint() const override;
    QSize minimumSizeHint() const override;

signals:
    void blockClicked(uint32_t segment, uint32_t block);
    void zoomChanged(double zoom);
    void layoutChanged();

protected:
    void paintEvent(QPaintEvent* event) override;
    void resizeEvent(QResizeEvent* event) override;
    void mouseMoveEvent(QMouseEvent* event) override;
    void mousePressEvent(QMouseEvent* event) override;
    void leaveEvent(QEvent* event) override;
    void wheelEvent(QWheelEvent* event) override;
    bool event(QEvent* event) override;

private:
    // The layout is out of date (a new state, size, fit height or zoom). It is computed once, when
    // next needed: painted, asked for, or once the events queued meanwhile are done while the
    // canvas shows; a window opening resizes the map several times before its first paint, and
    // one layout of 40,000 segments took 14-29 ms, five of them 95 ms before the window's first picture.
    void relayout();
    void ensureLayout();
    void outline(QPainter& p, uint32_t segment, uint32_t block, const QColor& color, int width) const;
    std::optional<std::pair<uint32_t, uint32_t>> selectedBlock() const;
    void findMarkedBlocks();

    std::shared_ptr<const model::DeviceState> m_state;
    std::shared_ptr<const model::Snapshot> m_snapshot;
    BlockMapLayout m_layout;
    bool m_layoutStale = false;
    bool m_layoutQueued = false;
    int m_fitHeight = 300;
    double m_zoom = 1.0;
    std::optional<uint64_t> m_selectedAddress;
    std::vector<uint64_t> m_marked;
    std::vector<std::pair<uint32_t, uint32_t>> m_markedBlocks;
    const BlockMapRect* m_hover = nullptr;
};

} // namespace memlens::views
