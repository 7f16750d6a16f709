#include "stack/StackModel.h"

#include "common/FrameText.h"
#include "common/ViewColors.h"

#include <QBrush>
#include <QFont>

#include <algorithm>
#include <set>

namespace memlens::views {

StackModel::StackModel(QObject* parent) : QAbstractItemModel(parent) {}

void StackModel::setStack(std::shared_ptr<const model::Snapshot> snapshot, model::StackId stack) {
    beginResetModel();
    m_snapshot = std::move(snapshot);
    m_stack = stack;
    m_classes.clear();
    m_rows.clear();
    if (m_snapshot && stack != 0 && stack < m_snapshot->stackCount()) {
        const size_t n = m_snapshot->stackSize(stack);
        m_classes.reserve(n);
        for (size_t i = 0; i < n; ++i) m_classes.push_back(model::classifyFrame(*m_snapshot, m_snapshot->stackBegin(stack)[i]));
        m_rows = model::foldStack(m_classes);
    }
    endResetModel();
}

void StackModel::clear() { setStack(nullptr, 0); }

model::FrameId StackModel::frameAt(uint32_t position) const { return m_snapshot->stackBegin(m_stack)[position]; }

QString StackModel::stackText() const {
    QStringList lines;
    for (uint32_t i = 0; i < m_classes.size(); ++i) lines << frametext::oneLine(*m_snapshot, frameAt(i));
    return lines.join(QLatin1Char('\n'));
}

QString StackModel::framesText(const QModelIndexList& indexes) const {
    std::set<uint32_t> positions;
    for (const QModelIndex& i : indexes) {
        if (!i.isValid() || i.model() != this) continue;
        const uint32_t first = i.data(FrameIndexRole).toUInt();
        const uint32_t count = i.data(FoldedRole).toBool() ? m_rows[i.row()].count : 1;
        for (uint32_t k = first; k < first + count; ++k) positions.insert(k);
    }
    QStringList lines;
    for (uint32_t p : positions) lines << frametext::oneLine(*m_snapshot, frameAt(p));
    return lines.join(QLatin1Char('\n'));
}

// Top-level rows have internal id 0; the children of top-level row r have internal id r + 1.
QModelIndex StackModel::index(int row, int column, const QModelIndex& parent) const {
    if (row < 0 || column < 0 || column >= ColumnCount) return {};
    if (!parent.isValid()) {
        if (row >= static_cast<int>(m_rows.size())) return {};
        return createIndex(row, column, quintptr(0));
    }
    if (parent.internalId() != 0 || parent.column() != 0) return {};
    const auto& r = m_rows[parent.row()];
    if (!r.folded || row >= static_cast<int>(r.count)) return {};
    return createIndex(row, column, quintptr(parent.row() + 1));
}

QModelIndex StackModel::parent(const QModelIndex& child) const {
    if (!child.isValid() || child.internalId() == 0) return {};
    return createIndex(static_cast<int>(child.internalId() - 1), 0, quintptr(0));
}

int StackModel::rowCount(const QModelIndex& parent) const {
    if (!parent.isValid()) return static_cast<int>(m_rows.size());
    if (parent.column() != 0 || parent.internalId() != 0) return 0;
    const auto& r = m_rows[parent.row()];
    return r.folded ? static_cast<int>(r.count) : 0;
}

int StackModel::columnCount(const QModelIndex&) const { return ColumnCount; }

QVariant StackModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
    switch (section) {
    case FunctionColumn: return tr("Function");
    case LocationColumn: return tr("Location");
    case KindColumn: return tr("Kind");
    }
    return {};
}

QString StackModel::kindText(uint32_t position) const {
    const auto& c = m_classes[position];
    switch (c.kind) {
    case model::FrameKind::User: return tr("Python");
    case model::FrameKind::Library:
        return c.library.empty() ? tr("Python library") : tr("Python \u00b7 %1").arg(QString::fromUtf8(c.library));
    case model::FrameKind::Native: return tr("C++");
    }
    return {};
}

QString StackModel::fxNodeText(const model::Snapshot& snap, model::FrameId f) {
    if (f >= snap.frames.size() || !snap.frames[f].hasFx()) return {};
    const model::Frame& fr = snap.frames[f];
    auto text = [&](model::StringId id) { return QString::fromUtf8(snap.str(id)); };
    QString s = tr("FX node");
    if (fr.fxName) s += QLatin1Char(' ') + text(fr.fxName);
    if (fr.fxOp || fr.fxTarget) {
        s += QStringLiteral(" (");
        if (fr.fxOp) s += text(fr.fxOp);
        if (fr.fxOp && fr.fxTarget) s += QStringLiteral(": ");
        if (fr.fxTarget) s += text(fr.fxTarget);
        s += QLatin1Char(')');
    }
    return s;
}

int StackModel::fxFramePosition() const {
    if (!m_snapshot) return -1;
    for (uint32_t i = 0; i < m_classes.size(); ++i) {
        const model::FrameId f = frameAt(i);
        if (f < m_snapshot->frames.size() && m_snapshot->frames[f].hasFx()) return static_cast<int>(i);
    }
    return -1;
}

QVariant StackModel::frameData(uint32_t position, int column, int role) const {
    const model::FrameId f = frameAt(position);
    const model::FrameKind kind = m_classes[position].kind;
    switch (role) {
    case Qt::DisplayRole:
        switch (column) {
        case FunctionColumn: {
            const QString fx = fxNodeText(*m_snapshot, f);
            return fx.isEmpty() ? frametext::function(*m_snapshot, f)
                                : frametext::function(*m_snapshot, f) + QStringLiteral("  [") + fx + QLatin1Char(']');
        }
        case LocationColumn: return frametext::location(*m_snapshot, f);
        case KindColumn: return kindText(position);
        }
        return {};
    case Qt::ToolTipRole: {
        const QString where = frametext::location(*m_snapshot, f, true);
        QString tip = QStringLiteral("<p style='white-space:pre-wrap'>") + frametext::function(*m_snapshot, f).toHtmlEscaped();
        if (!where.isEmpty()) tip += QStringLiteral("<br><span style='color:#777'>") + where.toHtmlEscaped() + QStringLiteral("</span>");
        tip += QStringLiteral("<br><i>") + kindText(position).toHtmlEscaped() + QStringLiteral("</i>");
        if (const QString fx = fxNodeText(*m_snapshot, f); !fx.isEmpty()) {
            tip += QStringLiteral("<br>") + fx.toHtmlEscaped();
            const model::Frame& fr = m_snapshot->frames[f];
            if (fr.fxOriginalTrace)
                tip += QStringLiteral("<br>") + tr("Original model code:") + QStringLiteral("<pre>") +
                       QString::fromUtf8(m_snapshot->str(fr.fxOriginalTrace)).toHtmlEscaped() + QStringLiteral("</pre>");
        }
        return tip + QStringLiteral("</p>");
    }
    case Qt::DecorationRole:
        return column == FunctionColumn ? QVariant(colors::frameKindIcon(kind)) : QVariant();
    case Qt::FontRole:
        if (kind == model::FrameKind::User && column == FunctionColumn) {
            QFont bold;
            bold.setBold(true);
            return bold;
        }
        return {};
    case Qt::ForegroundRole:
        return kind == model::FrameKind::User ? QVariant() : QVariant(QBrush(QColor(0x70, 0x70, 0x70)));
    case FrameKindRole: return static_cast<int>(kind);
    case FrameIdRole: return static_cast<uint>(f);
    case FoldedRole: return false;
    case FrameIndexRole: return position;
    }
    return {};
}

QVariant StackModel::foldData(const model::StackRow& row, int column, int role) const {
    switch (role) {
    case Qt::DisplayRole:
        if (column == FunctionColumn) return QString::fromStdString(row.label);
        if (column == KindColumn) return kindText(row.first);
        return {};
    case Qt::ToolTipRole: return tr("%1 frames folded; expand the row to see them").arg(row.count);
    case Qt::DecorationRole: return column == FunctionColumn ? QVariant(colors::frameKindIcon(row.kind)) : QVariant();
    case Qt::FontRole: {
        QFont italic;
        italic.setItalic(true);
        return italic;
    }
    case Qt::ForegroundRole: return QBrush(QColor(0x80, 0x80, 0x80));
    case FrameKindRole: return static_cast<int>(row.kind);
    case FoldedRole: return true;
    case FrameIndexRole: return row.first;
    }
    return {};
}

QVariant StackModel::data(const QModelIndex& index, int role) const {
    if (!index.isValid() || !m_snapshot) return {};
    if (index.internalId() == 0) {
        const auto& r = m_rows[index.row()];
        return r.folded ? foldData(r, index.column(), role) : frameData(r.first, index.column(), role);
    }
    const auto& parentRow = m_rows[index.internalId() - 1];
    return frameData(parentRow.first + static_cast<uint32_t>(index.row()), index.column(), role);
}

} // namespace memlens::views
