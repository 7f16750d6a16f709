#pragma once
// The snapshot's allocator settings as a readable table: each setting, its value and what it does
// to the caching allocator, and the device's trace ring buffer (model::describeSettings).
#include "memlens/model/SettingsDescription.h"

#include <QWidget>

class QLabel;
class QTreeWidget;

namespace memlens::views {

class AllocatorSettingsPanel : public QWidget {
    Q_OBJECT
public:
    explicit AllocatorSettingsPanel(QWidget* parent = nullptr);
    // nullptr: nothing shown. Hidden when the snapshot records no settings (torch before 2.3).
    void setSnapshot(const model::Snapshot* snapshot, int device);
    // "key = value" per row, for tests.
    QStringList rowTexts() const;

private:
    QLabel* m_title = nullptr;
    QTreeWidget* m_table = nullptr;
};

} // namespace memlens::views
