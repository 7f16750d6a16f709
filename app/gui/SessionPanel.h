#pragma once
// The session of the current document (a .memlens file): a line about the job and the shown
// snapshot, the iteration strip, and the process plot: NVML's process total against torch's
// reserved and allocated bytes over time, so the gap nvidia-smi shows is visible at every moment;
// a vertical line marks the shown snapshot. Buttons ask a live recorder for a snapshot or a
// graph scan now.
#include "memlens/model/MemoryBreakdown.h"
#include "memlens/model/ProcessSeries.h"
#include "memlens/model/SessionData.h"

#include <QWidget>

#include <optional>
#include <utility>
#include <vector>

class QCustomPlot;
class QCPItemRect;
class QCPItemStraightLine;
class QLabel;
class QPushButton;

namespace memlens::gui {

class IterationStrip;
class SessionState;

class SessionPanel : public QWidget {
    Q_OBJECT
public:
    explicit SessionPanel(QWidget* parent = nullptr);

    // nullptr: no session (a plain snapshot). device: the document's (torch's numbering).
    // traceSpan: the shown snapshot's trace (first and last entry's time, epoch µs), shaded in the
    // process plot: which part of the job the timeline above shows; nullopt: none (no trace, or
    // entries without times).
    void setSession(SessionState* session, int device = 0,
                    std::optional<std::pair<int64_t, int64_t>> traceSpan = std::nullopt);
    // Redraws after the session grew (poll) or the selected iteration changed.
    void refresh();
    // What nvidia-smi showed on the device (model::nvmlProcessSeries), as of the last refresh.
    const std::vector<model::TimedBytes>& nvmlSeries() const { return m_nvml; }
    // The shaded span in the plot's seconds, while shown.
    std::optional<std::pair<double, double>> traceSpanSeconds() const;

    IterationStrip* strip() const { return m_strip; }
    QCustomPlot* plot() const { return m_plot; }
    QString noteText() const;
    QString figuresText() const;
    // The process figures at the shown snapshot's time (nearest NVML sample), for the breakdown.
    std::optional<model::ProcessFigures> processFigures() const;
    int sampleCount() const;
    // Shorter than the timeline above it by default.
    QSize sizeHint() const override { return {600, 200}; }

signals:
    void iterationClicked(int64_t index);
    void message(const QString& text);

private:
    void refreshPlot();
    int64_t shownTimeUs() const;
    // The torch sample of the device nearest to timeUs, and NVML's process total then.
    const model::DeviceSample* nearestTorch(int64_t timeUs) const;
    std::optional<model::TimedBytes> nearestNvml(int64_t timeUs) const;

    SessionState* m_session = nullptr;
    int m_device = 0;
    std::vector<model::TimedBytes> m_nvml;  // what nvidia-smi showed on the device
    QLabel* m_note = nullptr;
    QLabel* m_figures = nullptr;
    QLabel* m_legend = nullptr;
    IterationStrip* m_strip = nullptr;
    QCustomPlot* m_plot = nullptr;
    QCPItemStraightLine* m_cursor = nullptr;
    QCPItemRect* m_span = nullptr;
    std::optional<std::pair<int64_t, int64_t>> m_traceSpan;
    QPushButton* m_snapshotNow = nullptr;
};

} // namespace memlens::gui
