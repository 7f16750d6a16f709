#pragma once
// Integer pixel geometry for the Qt-free view logic (views/core): what QPoint and QRect give the
// widgets, with the same meaning (a rectangle covers x .. x + width - 1, y .. y + height - 1).

namespace memlens::views {

struct PixelPoint {
    int x = 0;
    int y = 0;
    friend bool operator==(const PixelPoint&, const PixelPoint&) = default;
};

class PixelRect {
public:
    constexpr PixelRect() = default;
    constexpr PixelRect(int x, int y, int width, int height) : m_x(x), m_y(y), m_width(width), m_height(height) {}

    constexpr int x() const { return m_x; }
    constexpr int y() const { return m_y; }
    constexpr int width() const { return m_width; }
    constexpr int height() const { return m_height; }
    constexpr bool isEmpty() const { return m_width <= 0 || m_height <= 0; }
    constexpr PixelPoint topLeft() const { return {m_x, m_y}; }
    constexpr PixelPoint bottomRight() const { return {m_x + m_width - 1, m_y + m_height - 1}; }
    constexpr bool contains(PixelPoint p) const {
        return p.x >= m_x && p.x < m_x + m_width && p.y >= m_y && p.y < m_y + m_height;
    }
    friend bool operator==(const PixelRect&, const PixelRect&) = default;

private:
    int m_x = 0;
    int m_y = 0;
    int m_width = 0;
    int m_height = 0;
};

} // namespace memlens::views
