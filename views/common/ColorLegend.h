#pragma once
// A row of coloured swatches with labels, wrapping onto more lines when narrow. Swatches can be
// plain, hatched, outlined or a thin stripe, so a legend can explain every mark a view draws.
#include <QColor>
#include <QString>
#include <QVector>
#include <QWidget>

namespace memlens::views {

class ColorLegend : public QWidget {
    Q_OBJECT
public:
    enum class Swatch { Fill, Hatched, Outline, Stripe };
    struct Entry {
        QColor color;
        QString label;
        Swatch swatch = Swatch::Fill;
        QString toolTip;
    };

    explicit ColorLegend(QWidget* parent = nullptr);
    void setEntries(const QVector<Entry>& entries);
    const QVector<Entry>& entries() const { return m_entries; }

    QSize sizeHint() const override;
    QSize minimumSizeHint() const override;
    bool hasHeightForWidth() const override { return true; }
    int heightForWidth(int width) const override;

protected:
    void paintEvent(QPaintEvent* event) override;
    bool event(QEvent* event) override;

private:
    // Where each entry goes at a given width.
    QVector<QRect> place(int width) const;

    QVector<Entry> m_entries;
};

} // namespace memlens::views
