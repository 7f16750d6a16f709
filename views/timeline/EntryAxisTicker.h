#pragma once
// Ticks of the timeline's x axis: trace entry numbers ("5,000", "250k", "1.5M") or time since the
// first entry ("250 ms", "1.5 s", "2 min").
#include "timeline/QCustomPlotInclude.h"

namespace memlens::views {

class EntryAxisTicker : public QCPAxisTicker {
public:
    void setTimeMode(bool time) { m_time = time; }
    bool timeMode() const { return m_time; }

    static QString entryLabel(double index);
    // microseconds -> "0", "750 µs", "250 ms", "1.5 s", "2 min 30 s"
    static QString timeLabel(double us);

protected:
    double getTickStep(const QCPRange& range) override;
    QString getTickLabel(double tick, const QLocale& locale, QChar formatChar, int precision) override;

private:
    bool m_time = false;
};

} // namespace memlens::views
