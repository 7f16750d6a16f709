#pragma once
// The whole stack of the selected allocation (or, with nothing selected, of the current trace
// entry): Python and C++ frames told apart by icon, colour and a column; runs of C++ and library
// frames folded into expandable rows; copy to the clipboard. An empty stack says why it may be
// empty.
#include "memlens/model/Snapshot.h"

#include <QPointer>
#include <QWidget>

class QLabel;
class QToolButton;
class QTreeView;

namespace memlens::views {

class PlaceholderPages;
class SnapshotDocument;
class StackModel;

class StackView : public QWidget {
    Q_OBJECT
public:
    explicit StackView(QWidget* parent = nullptr);
    void setDocument(SnapshotDocument* doc);
    SnapshotDocument* document() const { return m_doc; }

    StackModel* model() const { return m_model; }
    QTreeView* tree() const { return m_tree; }
    QString titleText() const;
    QString placeholderText() const;  // empty while a stack is shown
    // The FX node and original model code shown under the stack; empty when none is shown.
    QString fxText() const;
    // Copies the selected frames, or the whole stack when nothing is selected.
    void copy() const;

protected:
    void resizeEvent(QResizeEvent* event) override;

private slots:
    void updateFxPanel();

private:
    void refresh();
    void setShowAll(bool all);

    QPointer<SnapshotDocument> m_doc;
    StackModel* m_model = nullptr;
    QLabel* m_title = nullptr;
    QToolButton* m_expand = nullptr;
    QToolButton* m_copy = nullptr;
    PlaceholderPages* m_pages = nullptr;
    QTreeView* m_tree = nullptr;
    QLabel* m_fx = nullptr;
};

} // namespace memlens::views
