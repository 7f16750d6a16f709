#pragma once
// "Why nvidia-smi shows more": at the current trace entry, the reserved memory split into its
// parts (live tensors, rounding, pending frees, fragmented free space, free segments) as one
// stacked bar with a byte count and a sentence per part. Process figures from a captured session
// continue the bar up to nvidia-smi's number; without them the view says what a snapshot misses.
#include "memlens/model/MemoryBreakdown.h"
#include "memlens/model/MemoryCategory.h"

#include <QPointer>
#include <QVector>
#include <QWidget>

#include <optional>

class QGridLayout;
class QLabel;

namespace memlens::views {

class PlaceholderPages;
class AllocatorSettingsPanel;
class BreakdownBar;
class SnapshotDocument;

class BreakdownView : public QWidget {
    Q_OBJECT
public:
    explicit BreakdownView(QWidget* parent = nullptr);
    void setDocument(SnapshotDocument* doc);
    SnapshotDocument* document() const { return m_doc; }
    // Figures measured of the process (a captured session); nullopt when none are known.
    void setProcessFigures(const std::optional<model::ProcessFigures>& figures);
    // The agent's tags of the shown snapshot (a session's): categories exact where they apply.
    void setCategoryTags(model::CategoryTags tags);

    const model::MemoryBreakdown& breakdown() const { return m_breakdown; }
    QString headlineText() const;
    QString noteText() const;
    // "label|bytes|explanation" per row shown, for tests.
    QStringList rowTexts() const;
    bool isShowingPlaceholder() const;
    // "Parameters 12 MiB · Gradients 12 MiB · ..." of the live tensors, for tests.
    QString categoryText() const;
    // The private pools line; empty when every segment is in the default pool.
    QString poolsText() const;
    AllocatorSettingsPanel* settingsPanel() const { return m_settings; }

private:
    void refresh();
    void ensureRows(int count);

    struct Row {
        QLabel* swatch;
        QLabel* label;
        QLabel* bytes;
        QLabel* percent;
        QLabel* explanation;
    };

    QPointer<SnapshotDocument> m_doc;
    std::optional<model::ProcessFigures> m_process;
    model::MemoryBreakdown m_breakdown;
    PlaceholderPages* m_pages = nullptr;
    QLabel* m_headline = nullptr;
    BreakdownBar* m_bar = nullptr;
    QGridLayout* m_grid = nullptr;
    QWidget* m_gridHost = nullptr;
    QVector<Row> m_rows;
    QLabel* m_note = nullptr;
    QLabel* m_categories = nullptr;
    QLabel* m_pools = nullptr;                    // private pools apart
    AllocatorSettingsPanel* m_settings = nullptr;  // the snapshot's allocator settings
    // the role of each allocation stack of the document's snapshot (computed once per document)
    const model::Snapshot* m_rolesOf = nullptr;
    std::vector<model::StackRole> m_roles;
    model::CategoryTags m_tags;
};

} // namespace memlens::views
