#include "graphs/RetainedGraphsModel.h"
#include "common/ByteText.h"


#include <QColor>
#include <QFont>
#include <QGuiApplication>
#include <QPalette>

namespace memlens::views {

namespace {

QString qs(const std::string& s) { return QString::fromStdString(s); }

QString statusOf(const model::GroupGrowth& g) {
    switch (g.kind) {
    case model::GroupGrowth::Kind::Single: return QStringLiteral("new");
    case model::GroupGrowth::Kind::Steady: return QStringLiteral("steady");
    case model::GroupGrowth::Kind::Growing: return QStringLiteral("growing");
    case model::GroupGrowth::Kind::Shrinking: return QStringLiteral("shrinking");
    case model::GroupGrowth::Kind::Gone: return QStringLiteral("gone");
    }
    return {};
}

QColor statusColor(const QString& status) {
    if (status == QLatin1String("growing")) return QColor(0xd9, 0x48, 0x1c);
    if (status == QLatin1String("new")) return QColor(0x2e, 0x9d, 0x4a);
    if (status == QLatin1String("shrinking")) return QColor(0x3b, 0x82, 0xc4);
    if (status == QLatin1String("gone")) return QColor(0xa0, 0xa0, 0xa0);
    return QColor(0x7a, 0x86, 0x99);
}

QString shapeText(const std::vector<int64_t>& shape) {
    QStringList parts;
    for (int64_t d : shape) parts << QString::number(d);
    return QLatin1Char('[') + parts.join(QStringLiteral(", ")) + QLatin1Char(']');
}

} // namespace

RetainedGraphsModel::RetainedGraphsModel(QObject* parent) : QAbstractItemModel(parent) {}

void RetainedGraphsModel::setScans(std::shared_ptr<const model::GraphScans> scans, int scan) {
    beginResetModel();
    m_scans = std::move(scans);
    m_scan = m_scans && scan >= 0 && scan < static_cast<int>(m_scans->scans().size()) ? scan : -1;
    m_groups.clear();
    if (m_scans && m_scan >= 0) {
        const auto s = static_cast<size_t>(m_scan);
        for (size_t g : m_scans->groupsAt(s)) {
            Group grp;
            grp.group = g;
            grp.graphs = m_scans->graphsOf(g, s);
            grp.growth = m_scans->growth(g, s);
            m_groups.push_back(std::move(grp));
        }
    }
    endResetModel();
}

QModelIndex RetainedGraphsModel::indexOfGraph(int graph) const {
    if (graph < 0) return {};
    for (size_t r = 0; r < m_groups.size(); ++r) {
        const auto& g = m_groups[r].graphs;
        if (g.size() == 1 && static_cast<int>(g[0]) == graph) return index(static_cast<int>(r), 0);
        if (g.size() > 1)
            for (size_t c = 0; c < g.size(); ++c)
                if (static_cast<int>(g[c]) == graph) return index(static_cast<int>(c), 0, index(static_cast<int>(r), 0));
    }
    return {};
}

QModelIndex RetainedGraphsModel::index(int row, int column, const QModelIndex& parent) const {
    if (row < 0 || column < 0 || column >= ColumnCount) return {};
    if (!parent.isValid()) {
        if (row >= static_cast<int>(m_groups.size())) return {};
        return createIndex(row, column, quintptr(0));
    }
    if (parent.internalId() != 0 || parent.column() != 0) return {};
    const int g = parent.row();
    if (g < 0 || g >= static_cast<int>(m_groups.size())) return {};
    const auto& graphs = m_groups[static_cast<size_t>(g)].graphs;
    if (graphs.size() < 2 || row >= static_cast<int>(graphs.size())) return {};
    return createIndex(row, column, quintptr(g + 1));
}

QModelIndex RetainedGraphsModel::parent(const QModelIndex& child) const {
    if (!child.isValid() || child.internalId() == 0) return {};
    return createIndex(static_cast<int>(child.internalId() - 1), 0, quintptr(0));
}

int RetainedGraphsModel::rowCount(const QModelIndex& parent) const {
    if (!parent.isValid()) return static_cast<int>(m_groups.size());
    if (parent.internalId() != 0 || parent.column() != 0) return 0;
    const auto& graphs = m_groups[static_cast<size_t>(parent.row())].graphs;
    return graphs.size() > 1 ? static_cast<int>(graphs.size()) : 0;
}

int RetainedGraphsModel::columnCount(const QModelIndex&) const { return ColumnCount; }

QVariant RetainedGraphsModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal) return {};
    if (role == Qt::DisplayRole) {
        switch (section) {
        case RootColumn: return tr("Root (who keeps it)");
        case GraphsColumn: return tr("Graphs");
        case RetainedColumn: return tr("Retained");
        case SavedColumn: return tr("Saved tensors");
        case FirstSeenColumn: return tr("First seen");
        case GrowthColumn: return tr("Growth");
        }
    }
    if (role == Qt::ToolTipRole) {
        switch (section) {
        case RootColumn: return tr("The named reference that keeps the graph alive; roots that differ only in an index are grouped");
        case GraphsColumn: return tr("Retained graphs in this scan");
        case RetainedColumn: return tr("Bytes the graphs keep alive (unique storages; parameters left out)");
        case SavedColumn: return tr("Saved-for-backward tensors: alive, released by backward, packed by a hook");
        case FirstSeenColumn: return tr("The iteration the oldest of these graphs first appeared in");
        case GrowthColumn: return tr("How the group changed over the scans up to this one");
        }
    }
    if (role == Qt::TextAlignmentRole && (section == GraphsColumn || section == RetainedColumn))
        return QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter);
    return {};
}

QString RetainedGraphsModel::savedText(const model::RetainedGraph& g) const {
    if (!g.savedListed) return tr("not listed");
    QStringList parts;
    if (g.backwardRan) return tr("%1 released (backward ran)").arg(g.savedReleased);
    if (g.savedAlive) parts << tr("%1 alive").arg(g.savedAlive);
    if (g.savedReleased) parts << tr("%1 released").arg(g.savedReleased);
    if (g.savedHooked) parts << tr("%1 hooked").arg(g.savedHooked);
    return parts.isEmpty() ? tr("none") : parts.join(QStringLiteral(" · "));
}

QString RetainedGraphsModel::graphTooltip(const model::RetainedGraph& g) const {
    QString t = QStringLiteral("<b>%1</b>").arg(qs(g.root).toHtmlEscaped());
    if (g.referrers.size() > 1) {
        t += QStringLiteral("<br>also reached as:");
        for (size_t i = 1; i < g.referrers.size(); ++i) t += QStringLiteral("<br>&nbsp;&nbsp;") + qs(g.referrers[i]).toHtmlEscaped();
    }
    t += QStringLiteral("<br>root tensor %1 %2 on %3, grad_fn %4")
             .arg(shapeText(g.rootShape), qs(g.rootDtype), qs(g.rootDevice), qs(g.rootGradFn).toHtmlEscaped());
    t += tr("<br>%1 nodes · retains %2 (%3 reachable from no other graph)")
             .arg(g.nodes)
             .arg(formatBytes(g.retainedBytes), formatBytes(g.exclusiveBytes));
    if (g.backwardRan) t += tr("<br>backward ran: a skeleton graph, its saved tensors were released");
    else if (g.savedListed && g.savedAlive) t += tr("<br>backward never ran on it: it keeps %1 saved tensors alive").arg(g.savedAlive);
    if (!g.savedListed) t += tr("<br>saved tensors: not listed (LibTorch does not expose them)");
    if (g.savedHooked) t += tr("<br>%1 saved tensors were packed by a hook (not inspected)").arg(g.savedHooked);
    if (g.unreachable) t += tr("<br>only a reference cycle keeps it: the next gc.collect() frees it");
    if (g.roots > 1) t += tr("<br>%1 tensors share this root node").arg(g.roots);
    if (g.detailOmitted) t += tr("<br>node detail left out of the scan (many graphs of this kind)");
    return t;
}

QVariant RetainedGraphsModel::groupData(const Group& grp, int column, int role) const {
    const model::RootGroup& group = m_scans->groups()[grp.group];
    const auto s = static_cast<size_t>(m_scan);
    const auto& scan = m_scans->scans()[s];
    const bool gone = grp.graphs.empty();
    const model::RootGroup::Point& p = group.points[s];
    const model::RootGroup::Point& was = s > 0 ? group.points[s - 1] : p;
    const bool single = grp.graphs.size() == 1;
    const model::RetainedGraph* only = single ? &scan.graphs[grp.graphs[0]] : nullptr;
    const QString status = statusOf(grp.growth);

    if (role == Qt::DisplayRole) {
        switch (column) {
        case RootColumn: return only ? qs(only->root) : qs(group.pattern);
        case GraphsColumn: return gone ? tr("0 (was %1)").arg(was.graphs) : QString::number(p.graphs);
        case RetainedColumn: return gone ? QStringLiteral("\u2014") : formatBytes(p.bytes);
        case SavedColumn: {
            if (gone) return QString();
            if (only) return savedText(*only);
            if (!p.savedListed) return tr("not listed");
            QStringList parts;
            if (p.savedAlive) parts << tr("%1 alive").arg(p.savedAlive);
            if (p.savedReleased) parts << tr("%1 released").arg(p.savedReleased);
            if (p.savedHooked) parts << tr("%1 hooked").arg(p.savedHooked);
            return parts.isEmpty() ? tr("none") : parts.join(QStringLiteral(" · "));
        }
        case FirstSeenColumn: return tr("iteration %1").arg(group.firstSeen);
        case GrowthColumn: return qs(grp.growth.text);
        }
    }
    if (role == SortRole) {
        switch (column) {
        case RootColumn: return qs(group.pattern);
        case GraphsColumn: return static_cast<qlonglong>(p.graphs);
        case RetainedColumn: return gone ? -1.0 : static_cast<double>(p.bytes);
        case SavedColumn: return static_cast<qlonglong>(p.savedAlive);
        case FirstSeenColumn: return static_cast<qlonglong>(group.firstSeen);
        case GrowthColumn: return grp.growth.bytesPerStep;
        }
    }
    if (role == Qt::ToolTipRole) {
        if (only) return graphTooltip(*only);
        QString t = QStringLiteral("<b>%1</b><br>").arg(qs(group.pattern).toHtmlEscaped());
        t += gone ? tr("gone: %1 graphs in the previous scan").arg(was.graphs)
                  : tr("%1 graphs that differ only in an index, %2 retained").arg(p.graphs).arg(formatBytes(p.bytes));
        t += QStringLiteral("<br>") + qs(grp.growth.text).toHtmlEscaped();
        return t;
    }
    if (role == Qt::DecorationRole && column == RootColumn) return statusColor(status);
    if (role == Qt::ForegroundRole && gone) return QGuiApplication::palette().color(QPalette::Disabled, QPalette::Text);
    if (role == Qt::ForegroundRole && column == GrowthColumn && grp.growth.kind == model::GroupGrowth::Kind::Growing)
        return statusColor(status);
    if (role == Qt::FontRole && column == RootColumn && !gone) {
        QFont f;
        f.setBold(grp.growth.kind == model::GroupGrowth::Kind::Growing);
        return f;
    }
    if (role == Qt::TextAlignmentRole && (column == GraphsColumn || column == RetainedColumn))
        return QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter);
    if (role == GraphRole) return only ? static_cast<int>(grp.graphs[0]) : -1;
    if (role == GroupRole) return static_cast<int>(grp.group);
    if (role == StatusRole) return status;
    if (role == CountsRole) {
        QVariantList counts;
        for (size_t k = 0; k <= s; ++k) counts << static_cast<qlonglong>(group.points[k].graphs);
        return counts;
    }
    return {};
}

QVariant RetainedGraphsModel::graphData(const Group& grp, size_t graph, int column, int role) const {
    const model::RetainedGraph& g = m_scans->scans()[static_cast<size_t>(m_scan)].graphs[graph];
    if (role == Qt::DisplayRole) {
        switch (column) {
        case RootColumn: return qs(g.root);
        case GraphsColumn: return QString();
        case RetainedColumn: return formatBytes(g.retainedBytes);
        case SavedColumn: return savedText(g);
        case FirstSeenColumn: return g.firstSeen ? tr("iteration %1").arg(*g.firstSeen) : QString();
        case GrowthColumn: return tr("%1 nodes").arg(g.nodes);
        }
    }
    if (role == SortRole) {
        switch (column) {
        case RootColumn: return qs(g.root);
        case GraphsColumn: return 1;
        case RetainedColumn: return static_cast<double>(g.retainedBytes);
        case SavedColumn: return static_cast<qlonglong>(g.savedAlive);
        case FirstSeenColumn: return static_cast<qlonglong>(g.firstSeen.value_or(0));
        case GrowthColumn: return static_cast<qlonglong>(g.nodes);
        }
    }
    if (role == Qt::ToolTipRole) return graphTooltip(g);
    if (role == Qt::TextAlignmentRole && (column == GraphsColumn || column == RetainedColumn))
        return QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter);
    if (role == Qt::ForegroundRole && column == GrowthColumn)
        return QGuiApplication::palette().color(QPalette::Disabled, QPalette::Text);
    if (role == GraphRole) return static_cast<int>(graph);
    if (role == GroupRole) return static_cast<int>(grp.group);
    if (role == StatusRole) return QString();
    return {};
}

QVariant RetainedGraphsModel::data(const QModelIndex& index, int role) const {
    if (!index.isValid() || !m_scans || m_scan < 0) return {};
    if (index.internalId() == 0) {
        if (index.row() >= static_cast<int>(m_groups.size())) return {};
        return groupData(m_groups[static_cast<size_t>(index.row())], index.column(), role);
    }
    const auto g = static_cast<size_t>(index.internalId() - 1);
    if (g >= m_groups.size() || index.row() >= static_cast<int>(m_groups[g].graphs.size())) return {};
    return graphData(m_groups[g], m_groups[g].graphs[static_cast<size_t>(index.row())], index.column(), role);
}

} // namespace memlens::views
