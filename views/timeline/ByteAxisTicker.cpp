#include "timeline/ByteAxisTicker.h"

#include "common/ByteText.h"

#include <cmath>

namespace memlens::views {

double ByteAxisTicker::stepFor(double rangeSize, int tickCount) {
    const double raw = rangeSize / std::max(1, tickCount);
    if (!(raw > 1)) return 1;
    return std::exp2(std::round(std::log2(raw)));
}

double ByteAxisTicker::getTickStep(const QCPRange& range) { return stepFor(range.size(), tickCount()); }

QString ByteAxisTicker::getTickLabel(double tick, const QLocale&, QChar, int) { return formatBytesShort(tick); }

int ByteAxisTicker::getSubTickCount(double) { return 1; }

} // namespace memlens::views
