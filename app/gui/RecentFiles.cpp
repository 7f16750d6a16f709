#include "RecentFiles.h"

#include <QFileInfo>
#include <QSettings>

namespace memlens::gui {

namespace {
const QString kKey = QStringLiteral("recentFiles");
}

RecentFiles::RecentFiles(bool persistent, QObject* parent) : QObject(parent), m_persistent(persistent) {
    if (m_persistent) m_files = QSettings().value(kKey).toStringList();
    while (m_files.size() > kMax) m_files.removeLast();
}

void RecentFiles::add(const QString& path) {
    const QString abs = QFileInfo(path).absoluteFilePath();
    m_files.removeAll(abs);
    m_files.prepend(abs);
    while (m_files.size() > kMax) m_files.removeLast();
    save();
}

void RecentFiles::remove(const QString& path) {
    if (m_files.removeAll(QFileInfo(path).absoluteFilePath()) > 0) save();
}

void RecentFiles::clear() {
    m_files.clear();
    save();
}

void RecentFiles::save() {
    if (m_persistent) QSettings().setValue(kKey, m_files);
    emit changed();
}

} // namespace memlens::gui
