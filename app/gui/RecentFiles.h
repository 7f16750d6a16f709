#pragma once
// The most recently opened files, newest first, kept in QSettings (key "recentFiles"), or only in
// memory when not persistent (automation runs leave the user's settings alone).
#include <QObject>
#include <QStringList>

namespace memlens::gui {

class RecentFiles : public QObject {
    Q_OBJECT
public:
    static constexpr int kMax = 10;

    explicit RecentFiles(bool persistent, QObject* parent = nullptr);

    QStringList files() const { return m_files; }
    void add(const QString& path);
    void remove(const QString& path);
    void clear();

signals:
    void changed();

private:
    void save();

    bool m_persistent;
    QStringList m_files;
};

} // namespace memlens::gui
