#pragma once
// What the window shows when no snapshot is open: open a file, open the bundled example, reopen
// a recent file, or drop files; and how to record a snapshot in the first place.
#include <QWidget>

class QLabel;
class QListWidget;
class QPushButton;

namespace memlens::gui {

class RecentFiles;

class StartPage : public QWidget {
    Q_OBJECT
public:
    StartPage(RecentFiles* recent, const QString& examplePath, QWidget* parent = nullptr);

signals:
    void openRequested();
    void fileRequested(const QString& path);

private:
    void refreshRecent();

    RecentFiles* m_recent;
    QString m_example;
    QListWidget* m_list = nullptr;
    QLabel* m_recentTitle = nullptr;
};

} // namespace memlens::gui
