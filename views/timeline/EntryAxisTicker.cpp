#include "timeline/EntryAxisTicker.h"

#include <cmath>

namespace memlens::views {

namespace {
QString trimmed(double v, int decimals) {
    QString s = QString::number(v, 'f', decimals);
    if (s.contains(QLatin1Char('.'))) {
        while (s.endsWith(QLatin1Char('0'))) s.chop(1);
        if (s.endsWith(QLatin1Char('.'))) s.chop(1);
    }
    return s;
}
} // namespace

QString EntryAxisTicker::entryLabel(double index) {
    const double a = std::fabs(index);
    if (a < 10000) return QString::number(static_cast<qint64>(std::llround(index)));
    if (a < 1e6) return trimmed(index / 1e3, 1) + QLatin1Char('k');
    return trimmed(index / 1e6, 2) + QLatin1Char('M');
}

QString EntryAxisTicker::timeLabel(double us) {
    const double a = std::fabs(us);
    if (a < 0.5) return QStringLiteral("0");
    if (a < 1e3) return trimmed(us, 0) + QStringLiteral(" µs");
    if (a < 1e6) return trimmed(us / 1e3, 2) + QStringLiteral(" ms");
    if (a < 60e6) return trimmed(us / 1e6, 2) + QStringLiteral(" s");
    const double minutes = std::floor(a / 60e6);
    const double seconds = (a - minutes * 60e6) / 1e6;
    QString s = (us < 0 ? QStringLiteral("-") : QString()) + trimmed(minutes, 0) + QStringLiteral(" min");
    if (seconds >= 0.5) s += QLatin1Char(' ') + trimmed(seconds, 0) + QStringLiteral(" s");
    return s;
}

double EntryAxisTicker::getTickStep(const QCPRange& range) {
    const double step = QCPAxisTicker::getTickStep(range);
    return m_time ? step : std::max(1.0, step);
}

QString EntryAxisTicker::getTickLabel(double tick, const QLocale&, QChar, int) {
    return m_time ? timeLabel(tick) : entryLabel(tick);
}

} // namespace memlens::views
