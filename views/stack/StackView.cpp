#include "stack/StackView.h"
#include "common/ByteText.h"

#include "common/PlaceholderPages.h"

#include "document/SnapshotDocument.h"
#include "stack/StackModel.h"

#include <QAction>
#include <QApplication>
#include <QClipboard>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QFontDatabase>
#include <QItemSelectionModel>
#include <QLabel>
#include <QToolButton>
#include <QTreeView>
#include <QVBoxLayout>

#include <algorithm>

namespace memlens::views {

namespace {

// What the trace entry is, in a few words: "entry #12: alloc 5 MiB at 0x7f…".
QString entryDescription(const SnapshotDocument& doc, int64_t i) {
    const auto& t = doc.deviceData().trace;
    if (i < 0 || static_cast<size_t>(i) >= t.rows()) return {};
    const QString action = t.action[i] == model::Action::Other ? QString::fromUtf8(doc.snapshot().str(t.actionName[i]))
                                                               : QString::fromLatin1(model::actionName(t.action[i]));
    QString s = QStringLiteral("Entry #%1: %2 of %3").arg(i).arg(action, formatBytes(t.size[i]));
    if (t.action[i] != model::Action::Oom && (t.flags[i] & model::TraceColumns::HasAddr))
        s += QStringLiteral(" at 0x") + QString::number(t.addr[i], 16);
    // the labels torch attaches to an entry: _set_memory_metadata's string, the compiled region
    auto label = [&](const model::SparseColumn<model::StringId>& column) -> QString {
        if (static_cast<size_t>(i) >= column.size()) return {};
        const std::string_view v = doc.snapshot().entryLabel(column[i]);
        return QString::fromUtf8(v.data(), static_cast<qsizetype>(v.size()));
    };
    if (const QString m = label(t.userMetadata); !m.isEmpty()) s += QStringLiteral(" · ") + m;
    if (const QString c = label(t.compileContext); !c.isEmpty()) s += QStringLiteral(" · ") + c;
    return s;
}

} // namespace

StackView::StackView(QWidget* parent) : QWidget(parent) {
    auto* v = new QVBoxLayout(this);
    v->setContentsMargins(6, 6, 6, 6);
    v->setSpacing(4);

    auto* head = new QHBoxLayout;
    m_title = new QLabel(this);
    m_title->setTextFormat(Qt::PlainText);
    m_title->setWordWrap(true);
    QFont bold = m_title->font();
    bold.setBold(true);
    m_title->setFont(bold);
    m_title->setTextInteractionFlags(Qt::TextSelectableByMouse);
    head->addWidget(m_title, 1);
    m_expand = new QToolButton(this);
    m_expand->setObjectName(QStringLiteral("showAllFrames"));
    m_expand->setText(tr("Show all frames"));
    m_expand->setCheckable(true);
    m_expand->setToolTip(tr("Unfold the runs of C++ and library frames"));
    head->addWidget(m_expand);
    m_copy = new QToolButton(this);
    m_copy->setObjectName(QStringLiteral("copyStack"));
    m_copy->setText(tr("Copy"));
    m_copy->setToolTip(tr("Copy the selected frames, or the whole stack, as text"));
    head->addWidget(m_copy);
    v->addLayout(head);

    m_pages = new PlaceholderPages(this);
    // the stack's placeholder explains at length, with links: top-left, rich text, not greyed
    m_pages->label()->setAlignment(Qt::AlignLeft | Qt::AlignTop);
    m_pages->label()->setTextFormat(Qt::RichText);
    m_pages->label()->setMargin(8);
    m_pages->label()->setEnabled(true);

    m_model = new StackModel(this);
    m_tree = new QTreeView(m_pages);
    m_tree->setModel(m_model);
    m_tree->setUniformRowHeights(true);
    m_tree->setAlternatingRowColors(true);
    m_tree->setSelectionMode(QAbstractItemView::ExtendedSelection);
    m_tree->setTextElideMode(Qt::ElideMiddle);
    m_tree->header()->setStretchLastSection(false);
    m_tree->header()->setSectionResizeMode(StackModel::FunctionColumn, QHeaderView::Stretch);
    m_tree->header()->setSectionResizeMode(StackModel::LocationColumn, QHeaderView::Interactive);
    m_tree->header()->setSectionResizeMode(StackModel::KindColumn, QHeaderView::ResizeToContents);
    m_tree->header()->resizeSection(StackModel::LocationColumn, 260);
    auto* copyAction = new QAction(tr("Copy"), m_tree);
    copyAction->setShortcut(QKeySequence::Copy);
    copyAction->setShortcutContext(Qt::WidgetShortcut);
    connect(copyAction, &QAction::triggered, this, &StackView::copy);
    m_tree->addAction(copyAction);
    m_pages->setContent(m_tree);
    v->addWidget(m_pages, 1);
    // the original model code of a frame of generated code (augment_with_fx_traces)
    m_fx = new QLabel(this);
    m_fx->setTextFormat(Qt::PlainText);
    m_fx->setWordWrap(false);
    m_fx->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_fx->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    m_fx->setStyleSheet(QStringLiteral("background: #f6f6f0; border: 1px solid #ddd; padding: 4px;"));
    m_fx->hide();
    v->addWidget(m_fx);
    connect(m_tree->selectionModel(), &QItemSelectionModel::currentChanged, this, &StackView::updateFxPanel);

    connect(m_copy, &QToolButton::clicked, this, &StackView::copy);
    connect(m_expand, &QToolButton::toggled, this, &StackView::setShowAll);
    connect(m_model, &QAbstractItemModel::modelReset, this, [this] { setShowAll(m_expand->isChecked()); });

    setDocument(nullptr);
}

void StackView::resizeEvent(QResizeEvent* event) {
    QWidget::resizeEvent(event);
    // the location column takes about a third of the width, so functions keep room when narrow
    m_tree->header()->resizeSection(StackModel::LocationColumn, std::clamp(width() * 3 / 10, 110, 320));
    // narrow, the icon alone tells the kind of frame (and the tooltip names it)
    m_tree->setColumnHidden(StackModel::KindColumn, width() < 520);
}

void StackView::setDocument(SnapshotDocument* doc) {
    if (m_doc) disconnect(m_doc, nullptr, this, nullptr);
    m_doc = doc;
    if (m_doc) {
        connect(m_doc, &SnapshotDocument::allocationSelected, this, &StackView::refresh);
        connect(m_doc, &SnapshotDocument::currentEventChanged, this, &StackView::refresh);
        connect(m_doc, &SnapshotDocument::deviceChanged, this, &StackView::refresh);
        connect(m_doc, &QObject::destroyed, this, [this] { setDocument(nullptr); });
    }
    refresh();
}

QString StackView::titleText() const { return m_title->text(); }
QString StackView::placeholderText() const { return m_pages->placeholderText(); }

void StackView::setShowAll(bool all) {
    if (all)
        m_tree->expandAll();
    else
        m_tree->collapseAll();
}

void StackView::copy() const {
    if (m_model->frameCount() == 0) return;
    const QModelIndexList rows = m_tree->selectionModel()->selectedRows(StackModel::FunctionColumn);
    QApplication::clipboard()->setText(rows.isEmpty() ? m_model->stackText() : m_model->framesText(rows));
}

void StackView::refresh() {
    if (!m_doc) {
        m_model->clear();
        m_title->setText(tr("No snapshot open"));
        m_pages->showPlaceholder(tr("The stack of the selected allocation appears here."));
        m_copy->setEnabled(false);
        m_expand->setEnabled(false);
        m_fx->hide();
        return;
    }
    model::StackId stack = 0;
    QString title;
    if (m_doc->selectedStack() != 0 || !m_doc->selectedDescription().isEmpty()) {
        stack = m_doc->selectedStack();
        title = m_doc->selectedDescription();
        if (title.isEmpty()) title = tr("Selected allocation");
    } else if (m_doc->currentEvent() >= 0) {
        stack = m_doc->deviceData().trace.stack[m_doc->currentEvent()];
        title = entryDescription(*m_doc, m_doc->currentEvent());
    } else {
        title = tr("Before the first entry");
    }
    m_title->setText(title);
    // the same stack again keeps its expansion and selection
    if (stack != m_model->stack() || m_model->snapshot() != m_doc->loaded().snapshot.get())
        m_model->setStack(m_doc->loaded().snapshot, stack);
    updateFxPanel();
    const bool have = m_model->frameCount() > 0;
    m_copy->setEnabled(have);
    m_expand->setEnabled(have);
    if (have) {
        m_pages->showContent();
        return;
    }
    m_pages->showPlaceholder(tr(
        "<b>No stack was recorded for this allocation.</b> Possible reasons:<ul>"
        "<li>it was allocated before recording started, so its <tt>alloc</tt> entry is not in the trace;</li>"
        "<li>history was recorded without stacks (<tt>_record_memory_history(stacks=...)</tt> or "
        "<tt>context=None</tt>);</li>"
        "<li>segment entries, and frees in some torch versions, carry no stack;</li>"
        "<li>it ran on a thread without Python frames (backward on the autograd thread) and only Python "
        "stacks were recorded;</li>"
        "<li>the file is a torch 2.0 snapshot or a state dump without frames.</li></ul>"));
}

// The FX node and original model code of the selected frame, else of the innermost frame that
// has them; hidden when the stack has none.
void StackView::updateFxPanel() {
    const model::Snapshot* snap = m_model->snapshot();
    int position = -1;
    const QModelIndex current = m_tree->currentIndex();
    if (snap && current.isValid() && !current.data(StackModel::FoldedRole).toBool()) {
        const uint32_t p = current.data(StackModel::FrameIndexRole).toUInt();
        const model::FrameId f = m_model->frameIdAt(p);
        if (f < snap->frames.size() && snap->frames[f].hasFx()) position = static_cast<int>(p);
    }
    if (position < 0) position = m_model->fxFramePosition();
    if (!snap || position < 0) {
        m_fx->hide();
        m_fx->clear();
        return;
    }
    const model::FrameId f = m_model->frameIdAt(static_cast<uint32_t>(position));
    const model::Frame& fr = snap->frames[f];
    QString text = StackModel::fxNodeText(*snap, f);
    if (fr.fxOriginalTrace)
        text += QLatin1Char('\n') + tr("Original model code:") + QLatin1Char('\n') +
                QString::fromUtf8(snap->str(fr.fxOriginalTrace)).trimmed();
    m_fx->setText(text);
    m_fx->show();
}

QString StackView::fxText() const { return m_fx->isHidden() ? QString() : m_fx->text(); }

} // namespace memlens::views
