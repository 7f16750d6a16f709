#pragma once
// A strip under the menu while a file loads: its name, the reader's phase, a progress bar and
// Cancel.
#include <QFrame>

class QLabel;
class QProgressBar;

namespace memlens::gui {

class LoadProgressPanel : public QFrame {
    Q_OBJECT
public:
    explicit LoadProgressPanel(QWidget* parent = nullptr);

    void start(const QString& fileName, int queued);
    void setProgress(const QString& phase, double fraction);
    void finish();

signals:
    void cancelRequested();

private:
    QLabel* m_label = nullptr;
    QProgressBar* m_bar = nullptr;
    QString m_file;
    int m_queued = 0;
};

} // namespace memlens::gui
