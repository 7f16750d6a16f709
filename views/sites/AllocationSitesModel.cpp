#include "sites/AllocationSitesModel.h"
#include "common/ByteText.h"

#include "common/FrameText.h"
#include "common/ViewColors.h"

#include <QBrush>
#include <QLocale>

namespace memlens::views {

namespace {
QString count(uint64_t n) { return QLocale().toString(static_cast<qulonglong>(n)); }
} // namespace

AllocationSitesModel::AllocationSitesModel(Tree tree, QObject* parent) : QAbstractItemModel(parent), m_tree(tree) {}

void AllocationSitesModel::setSites(std::shared_ptr<const model::Snapshot> snapshot,
                                    std::shared_ptr<const model::AllocationSites> sites, bool range) {
    beginResetModel();
    m_snapshot = std::move(snapshot);
    m_sites = m_snapshot ? std::move(sites) : nullptr;
    m_range = range;
    if (m_snapshot.get() != m_kindsOf) {
        m_kinds.clear();
        if (m_snapshot) {
            m_kinds.reserve(m_snapshot->frames.size());
            for (model::FrameId f = 0; f < m_snapshot->frames.size(); ++f) m_kinds.push_back(model::classifyFrame(*m_snapshot, f).kind);
        }
        m_kindsOf = m_snapshot.get();
    }
    endResetModel();
}

void AllocationSitesModel::clear() { setSites(nullptr, nullptr, false); }

const model::SiteTree* AllocationSitesModel::siteTree() const {
    if (!m_sites) return nullptr;
    return m_tree == Tree::BottomUp ? &m_sites->bottomUp : &m_sites->topDown;
}

const model::SiteNode* AllocationSitesModel::node(const QModelIndex& index) const {
    const model::SiteTree* t = siteTree();
    if (!t || !index.isValid() || index.model() != this) return nullptr;
    return &t->nodes[index.internalId()];
}

// internal id: the node's index in the tree (never 0, the root, which has no index)
QModelIndex AllocationSitesModel::index(int row, int column, const QModelIndex& parent) const {
    const model::SiteTree* t = siteTree();
    if (!t || t->nodes.empty() || row < 0 || column < 0 || column >= ColumnCount) return {};
    if (parent.isValid() && parent.column() != 0) return {};
    const model::SiteNode& p = t->nodes[parent.isValid() ? parent.internalId() : 0];
    if (static_cast<uint32_t>(row) >= p.childCount) return {};
    return createIndex(row, column, quintptr(p.firstChild + static_cast<uint32_t>(row)));
}

QModelIndex AllocationSitesModel::parent(const QModelIndex& child) const {
    const model::SiteTree* t = siteTree();
    if (!t || !child.isValid()) return {};
    const uint32_t p = t->nodes[child.internalId()].parent;
    if (p == 0) return {};
    return createIndex(static_cast<int>(t->rowOf(p)), 0, quintptr(p));
}

int AllocationSitesModel::rowCount(const QModelIndex& parent) const {
    const model::SiteTree* t = siteTree();
    if (!t || t->nodes.empty()) return 0;
    if (parent.isValid() && parent.column() != 0) return 0;
    return static_cast<int>(t->nodes[parent.isValid() ? parent.internalId() : 0].childCount);
}

int AllocationSitesModel::columnCount(const QModelIndex&) const { return ColumnCount; }

QVariant AllocationSitesModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal) return {};
    if (role == Qt::DisplayRole) {
        switch (section) {
        case FunctionColumn: return m_tree == Tree::BottomUp ? tr("Allocated at / called from") : tr("Caller / callee");
        case LocationColumn: return tr("Location");
        case BytesColumn: return tr("Bytes");
        case PercentColumn: return tr("%");
        case CountColumn: return tr("Count");
        }
    }
    if (role == Qt::ToolTipRole && section == BytesColumn)
        return m_range ? tr("Bytes requested by the allocations in the selected range") : tr("Bytes requested by live allocations");
    if (role == Qt::TextAlignmentRole && section >= BytesColumn) return QVariant(Qt::AlignRight | Qt::AlignVCenter);
    return {};
}

QString AllocationSitesModel::functionText(model::FrameId f) const {
    if (f == model::kNoFrame) return tr("(no stack recorded)");
    return frametext::function(*m_snapshot, f);
}

QString AllocationSitesModel::locationText(model::FrameId f, bool full) const {
    if (f == model::kNoFrame) return {};
    return frametext::location(*m_snapshot, f, full);
}

QString AllocationSitesModel::describe(const QModelIndex& index) const {
    const model::SiteNode* n = node(index);
    if (!n) return {};
    QString what = functionText(n->frame);
    const QString where = locationText(n->frame, false);
    if (!where.isEmpty()) what += QStringLiteral(" (") + where + QLatin1Char(')');
    return tr("%1: %2 in %3 allocations").arg(what, formatBytes(n->bytes), count(n->count));
}

QVariant AllocationSitesModel::data(const QModelIndex& index, int role) const {
    const model::SiteNode* n = node(index);
    if (!n) return {};
    const uint64_t total = m_sites->bottomUp.nodes.empty() ? 0 : m_sites->bottomUp.root().bytes;
    const double share = total ? static_cast<double>(n->bytes) / static_cast<double>(total) : 0.0;
    const model::FrameKind kind = n->frame == model::kNoFrame || n->frame >= m_kinds.size() ? model::FrameKind::Native
                                                                                              : m_kinds[n->frame];
    switch (role) {
    case Qt::DisplayRole:
        switch (index.column()) {
        case FunctionColumn: return functionText(n->frame);
        case LocationColumn: return locationText(n->frame, false);
        case BytesColumn: return formatBytes(n->bytes);
        case PercentColumn: return QString::number(share * 100.0, 'f', 1);
        case CountColumn: return count(n->count);
        }
        return {};
    case SortRole:
        switch (index.column()) {
        case FunctionColumn: return functionText(n->frame);
        case LocationColumn: return locationText(n->frame, true);
        case BytesColumn:
        case PercentColumn: return static_cast<qulonglong>(n->bytes);
        case CountColumn: return static_cast<qulonglong>(n->count);
        }
        return {};
    case Qt::TextAlignmentRole:
        return index.column() >= BytesColumn ? QVariant(Qt::AlignRight | Qt::AlignVCenter) : QVariant();
    case Qt::DecorationRole:
        return index.column() == FunctionColumn && n->frame != model::kNoFrame ? QVariant(colors::frameKindIcon(kind)) : QVariant();
    case Qt::ForegroundRole:
        if (n->frame == model::kNoFrame || (index.column() <= LocationColumn && kind != model::FrameKind::User))
            return QBrush(QColor(0x70, 0x70, 0x70));
        return {};
    case Qt::ToolTipRole: {
        QString tip = QStringLiteral("<p style='white-space:pre-wrap'><b>") + functionText(n->frame).toHtmlEscaped() + QStringLiteral("</b>");
        const QString where = locationText(n->frame, true);
        if (!where.isEmpty()) tip += QStringLiteral("<br>") + where.toHtmlEscaped();
        tip += QStringLiteral("<br>%1 (%2 B) in %3 allocations")
                   .arg(formatBytes(n->bytes), QLocale().toString(static_cast<qulonglong>(n->bytes)), count(n->count));
        if (m_range) tip += tr("<br>%1 of it still live at the end of the range").arg(formatBytes(n->liveBytes));
        return tip + QStringLiteral("</p>");
    }
    case StackRole: return static_cast<uint>(n->topStack);
    case FrameIdRole: return static_cast<uint>(n->frame);
    case NodeRole: return static_cast<uint>(index.internalId());
    case FilterRole: return functionText(n->frame) + QLatin1Char(' ') + locationText(n->frame, true);
    case LiveBytesRole: return static_cast<qulonglong>(n->liveBytes);
    }
    return {};
}

} // namespace memlens::views
