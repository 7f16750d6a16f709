#pragma once
// One stack as an item model: a row per frame, innermost first, with runs of C++ frames and of
// library frames folded into one expandable row each ("… 37 C++ frames"), whose children are the
// folded frames. Columns: function, location (file:line), kind (Python, Python · torch, C++).
#include "memlens/model/FrameClassification.h"
#include "memlens/model/Snapshot.h"
#include "memlens/model/StackFolding.h"

#include <QAbstractItemModel>

#include <memory>
#include <vector>

namespace memlens::views {

class StackModel : public QAbstractItemModel {
    Q_OBJECT
public:
    enum Column { FunctionColumn, LocationColumn, KindColumn, ColumnCount };
    enum Role {
        FrameKindRole = Qt::UserRole + 1,  // model::FrameKind as int
        FrameIdRole,                       // model::FrameId; absent on folded rows
        FoldedRole,                        // true on a row that folds several frames
        FrameIndexRole,                    // position of the (first) frame in the stack
    };

    explicit StackModel(QObject* parent = nullptr);

    void setStack(std::shared_ptr<const model::Snapshot> snapshot, model::StackId stack);
    void clear();
    model::StackId stack() const { return m_stack; }
    const model::Snapshot* snapshot() const { return m_snapshot.get(); }
    int frameCount() const { return static_cast<int>(m_classes.size()); }
    // Every frame, unfolded, one per line, innermost first: "function (file:line)".
    QString stackText() const;
    // The frames behind some indexes (a folded row brings all of its frames), in stack order.
    QString framesText(const QModelIndexList& indexes) const;
    // "FX node addmm (call_function: aten.addmm.default)" for a frame of generated code that
    // _dump_snapshot(augment_with_fx_traces=True) annotated; empty otherwise.
    static QString fxNodeText(const model::Snapshot& snap, model::FrameId f);
    // The innermost frame with FX information, as a position in the stack; -1 if none.
    int fxFramePosition() const;
    model::FrameId frameIdAt(uint32_t position) const { return frameAt(position); }

    QModelIndex index(int row, int column, const QModelIndex& parent = QModelIndex()) const override;
    QModelIndex parent(const QModelIndex& child) const override;
    int rowCount(const QModelIndex& parent = QModelIndex()) const override;
    int columnCount(const QModelIndex& parent = QModelIndex()) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

private:
    model::FrameId frameAt(uint32_t position) const;
    QVariant frameData(uint32_t position, int column, int role) const;
    QVariant foldData(const model::StackRow& row, int column, int role) const;
    QString kindText(uint32_t position) const;

    std::shared_ptr<const model::Snapshot> m_snapshot;
    model::StackId m_stack = 0;
    std::vector<model::FrameClass> m_classes;  // per frame of the stack
    std::vector<model::StackRow> m_rows;       // top-level rows
};

} // namespace memlens::views
