#include "events/EventsModel.h"

#include "common/ByteText.h"
#include "document/SnapshotDocument.h"
#include "core/StackFrames.h"

#include <QBrush>
#include <QColor>
#include <QFont>
#include <QFontDatabase>
#include <QLocale>

#include <algorithm>

namespace memlens::views {

namespace {

QColor actionColor(model::Action a) {
    using model::Action;
    switch (a) {
    case Action::Alloc: return QColor(0x2e, 0x7d, 0x32);
    case Action::FreeRequested:
    case Action::FreeCompleted:
    case Action::Free: return QColor(0xa3, 0x3b, 0x3b);
    case Action::SegmentAlloc:
    case Action::SegmentFree:
    case Action::SegmentMap:
    case Action::SegmentUnmap: return QColor(0x1f, 0x5f, 0xa8);
    case Action::Oom: return QColor(0xd6, 0x27, 0x28);
    default: return QColor(0x55, 0x55, 0x55);
    }
}

} // namespace

EventsModel::EventsModel(QObject* parent)
    : QAbstractTableModel(parent), m_fixedFont(QFontDatabase::systemFont(QFontDatabase::FixedFont)) {
    m_boldFont.setBold(true);
}

void EventsModel::setDocument(SnapshotDocument* doc) {
    beginResetModel();
    if (m_doc) disconnect(m_doc, nullptr, this, nullptr);
    m_doc = doc;
    if (doc) {
        connect(doc, &SnapshotDocument::deviceChanged, this, [this] { showAll(); });
        connect(doc, &QObject::destroyed, this, [this] {
            beginResetModel();
            m_useList = false;
            m_count = 0;
            m_windowFirst = 0;
            m_entries.clear();
            endResetModel();
        });
    }
    m_useList = false;
    m_entries.clear();
    m_first = 0;
    m_count = entryCount();
    m_windowFirst = 0;
    resetFrames();
    endResetModel();
}

void EventsModel::resetFrames() {
    const size_t stacks = m_doc ? m_doc->snapshot().stackCount() : 0;
    m_frameLabels.assign(stacks, QString());
    m_frameKnown.assign(stacks, 0);
    const auto* t = trace();
    m_timeOrigin = 0;
    if (t)
        for (size_t i = 0; i < t->rows(); ++i)
            if (t->flags[i] & model::TraceColumns::HasTime) {
                m_timeOrigin = t->timeUs[i];
                break;
            }
}

void EventsModel::setRange(int64_t first, int64_t last) {
    beginResetModel();
    const int64_t n = entryCount();
    first = std::max<int64_t>(first, 0);
    last = std::min<int64_t>(last, n - 1);
    m_useList = false;
    m_entries.clear();
    m_first = first;
    m_count = std::max<int64_t>(0, last - first + 1);
    m_windowFirst = 0;
    endResetModel();
}

void EventsModel::setEntries(std::vector<int64_t> entries) {
    beginResetModel();
    m_useList = true;
    m_entries = std::move(entries);
    const int64_t n = entryCount();
    std::erase_if(m_entries, [n](int64_t e) { return e < 0 || e >= n; });
    m_windowFirst = 0;
    endResetModel();
}

void EventsModel::showAll() {
    beginResetModel();
    m_useList = false;
    m_entries.clear();
    m_first = 0;
    m_count = entryCount();
    m_windowFirst = 0;
    resetFrames();
    endResetModel();
}

QString EventsModel::labelText(const model::SparseColumn<model::StringId>& column, size_t entry) const {
    if (entry >= column.size()) return {};
    const std::string_view s = m_doc->snapshot().entryLabel(column[entry]);
    return QString::fromUtf8(s.data(), static_cast<qsizetype>(s.size()));
}

const model::TraceColumns* EventsModel::trace() const { return m_doc ? &m_doc->deviceData().trace : nullptr; }

int64_t EventsModel::entryCount() const { return m_doc ? m_doc->entryCount() : 0; }

int64_t EventsModel::shownCount() const {
    if (!m_doc) return 0;
    return m_useList ? static_cast<int64_t>(m_entries.size()) : m_count;
}

int64_t EventsModel::entryAt(int row) const {
    if (row < 0 || row >= rowCount()) return -1;
    const int64_t k = m_windowFirst + row;
    return m_useList ? m_entries[static_cast<size_t>(k)] : m_first + k;
}

int64_t EventsModel::shownIndexOf(int64_t entry) const {
    if (m_useList) {
        const auto it = std::lower_bound(m_entries.begin(), m_entries.end(), entry);
        return it != m_entries.end() && *it == entry ? static_cast<int64_t>(it - m_entries.begin()) : -1;
    }
    return entry >= m_first && entry < m_first + m_count ? entry - m_first : -1;
}

int EventsModel::rowOf(int64_t entry) const {
    const int64_t k = shownIndexOf(entry);
    return k >= m_windowFirst && k < m_windowFirst + rowCount() ? static_cast<int>(k - m_windowFirst) : -1;
}

bool EventsModel::showEntry(int64_t entry) {
    const int64_t k = shownIndexOf(entry);
    if (k < 0) return false;
    if (rowOf(entry) >= 0) return true;
    setWindowFirst(k - m_windowRows / 2);  // the entry in the middle of the rows
    return true;
}

bool EventsModel::moveWindow(int64_t by) {
    const int64_t before = m_windowFirst;
    setWindowFirst(m_windowFirst + by);
    return m_windowFirst != before;
}

void EventsModel::setWindowFirst(int64_t first) {
    first = std::clamp<int64_t>(first, 0, std::max<int64_t>(0, shownCount() - m_windowRows));
    if (first == m_windowFirst) return;
    beginResetModel();
    m_windowFirst = first;
    endResetModel();
}

void EventsModel::setWindowRows(int64_t rows) {
    beginResetModel();
    m_windowRows = std::max<int64_t>(rows, 2);
    m_windowFirst = 0;
    endResetModel();
}

int EventsModel::rowCount(const QModelIndex& parent) const {
    if (parent.isValid() || !m_doc) return 0;
    return static_cast<int>(std::clamp<int64_t>(shownCount() - m_windowFirst, 0, m_windowRows));
}

int EventsModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QString EventsModel::frameLabel(model::StackId stack) const {
    if (stack >= m_frameLabels.size()) return {};
    if (!m_frameKnown[stack]) {
        m_frameLabels[stack] = QString::fromStdString(frames::topFrameLabel(m_doc->snapshot(), stack));
        m_frameKnown[stack] = 1;
    }
    return m_frameLabels[stack];
}

QString EventsModel::frameTooltip(model::StackId stack) const {
    const auto fr = frames::usefulFrames(m_doc->snapshot(), stack, 16);
    QStringList lines;
    for (model::FrameId f : fr) lines << QString::fromStdString(frames::longLabel(m_doc->snapshot(), f));
    if (lines.isEmpty()) return tr("No stack was recorded for this entry.");
    return lines.join(QLatin1Char('\n'));
}

QVariant EventsModel::data(const QModelIndex& index, int role) const {
    if (!index.isValid() || index.row() >= rowCount() || index.column() >= ColumnCount) return {};
    const model::TraceColumns* t = trace();
    const int64_t entry = entryAt(index.row());
    if (!t || entry < 0) return {};
    const auto i = static_cast<size_t>(entry);
    const model::Action action = t->action[i];
    const uint8_t flags = t->flags[i];
    const int column = index.column();
    switch (role) {
    case EntryRole: return QVariant::fromValue<qlonglong>(entry);
    case Qt::DisplayRole:
        switch (column) {
        case IndexColumn: return QVariant::fromValue<qlonglong>(entry);
        case TimeColumn:
            if (!(flags & model::TraceColumns::HasTime)) return {};
            return QString::number(static_cast<double>(t->timeUs[i] - m_timeOrigin) / 1000.0, 'f', 3);
        case ActionColumn:
            if (action == model::Action::Other) {
                const std::string_view name = m_doc->snapshot().str(t->actionName[i]);
                return QString::fromUtf8(name.data(), static_cast<qsizetype>(name.size()));
            }
            return QString::fromLatin1(model::actionName(action));
        case AddressColumn:
            if (action == model::Action::Oom) return tr("%1 free").arg(formatBytes(static_cast<double>(t->addr[i])));
            if (!(flags & model::TraceColumns::HasAddr)) return {};
            return QStringLiteral("0x") + QString::number(t->addr[i], 16);
        case SizeColumn: return formatBytes(static_cast<double>(t->size[i]));
        case FrameColumn: return frameLabel(t->stack[i]);
        case MetadataColumn: return labelText(t->userMetadata, i);
        case CompileContextColumn: return labelText(t->compileContext, i);
        }
        return {};
    case SortValueRole:
        switch (column) {
        case SizeColumn: return QVariant::fromValue<qulonglong>(t->size[i]);
        case AddressColumn: return QVariant::fromValue<qulonglong>(t->addr[i]);
        case TimeColumn: return QVariant::fromValue<qlonglong>(t->timeUs[i]);
        default: return data(index, Qt::DisplayRole);
        }
    case Qt::ToolTipRole:
        if (column == FrameColumn) return frameTooltip(t->stack[i]);
        if (column == MetadataColumn || column == CompileContextColumn) {
            const QString text = labelText(column == MetadataColumn ? t->userMetadata : t->compileContext, i);
            return text.isEmpty() ? QVariant() : QVariant(text);
        }
        if (column == SizeColumn) return tr("%1 bytes").arg(QLocale::system().toString(static_cast<qulonglong>(t->size[i])));
        return {};
    case Qt::ForegroundRole:
        if (column == ActionColumn) return QBrush(actionColor(action));
        return {};
    case Qt::FontRole:
        if (column == AddressColumn || column == SizeColumn || column == IndexColumn || column == TimeColumn)
            return m_fixedFont;
        if (column == ActionColumn && action == model::Action::Oom) return m_boldFont;
        return {};
    case Qt::TextAlignmentRole:
        if (column == IndexColumn || column == TimeColumn || column == SizeColumn)
            return QVariant::fromValue<int>(Qt::AlignRight | Qt::AlignVCenter);
        return QVariant::fromValue<int>(Qt::AlignLeft | Qt::AlignVCenter);
    default: return {};
    }
}

QVariant EventsModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return QAbstractTableModel::headerData(section, orientation, role);
    switch (section) {
    case IndexColumn: return tr("Entry");
    case TimeColumn: return tr("Time (ms)");
    case ActionColumn: return tr("Action");
    case AddressColumn: return tr("Address");
    case SizeColumn: return tr("Size");
    case FrameColumn: return tr("Top frame");
    case MetadataColumn: return tr("User metadata");
    case CompileContextColumn: return tr("Compile context");
    }
    return {};
}

} // namespace memlens::views
