#pragma once
// Axis ticks at round binary sizes (…, 128 MiB, 256 MiB, 512 MiB, 1 GiB…) labelled in KiB/MiB/GiB.
#include "timeline/QCustomPlotInclude.h"

namespace memlens::views {

class ByteAxisTicker : public QCPAxisTicker {
public:
    // The power of two nearest to range / tick count (at least 1).
    static double stepFor(double rangeSize, int tickCount);

protected:
    double getTickStep(const QCPRange& range) override;
    QString getTickLabel(double tick, const QLocale& locale, QChar formatChar, int precision) override;
    int getSubTickCount(double tickStep) override;
};

} // namespace memlens::views
