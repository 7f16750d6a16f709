#include "NavigationActions.h"

#include "core/EventNavigation.h"
#include "document/SnapshotDocument.h"

#include <QAction>
#include <QMenu>
#include <QWidget>

namespace memlens::gui {

namespace nav = views::navigation;

NavigationActions::NavigationActions(QWidget* window) : QObject(window), m_window(window) {
    nextEvent = make(tr("Next Entry"), QKeySequence(Qt::CTRL | Qt::Key_Right), tr("Go to the next trace entry"));
    previousEvent = make(tr("Previous Entry"), QKeySequence(Qt::CTRL | Qt::Key_Left), tr("Go to the previous trace entry"));
    nextSameAllocation = make(tr("Next Entry of This Allocation"), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_Right),
                              tr("From an alloc to its free (same address), or a segment's map to its free"));
    previousSameAllocation = make(tr("Previous Entry of This Allocation"), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_Left),
                                  tr("From a free back to its alloc (same address)"));
    nextMarker = make(tr("Next Marker"), QKeySequence(Qt::CTRL | Qt::Key_Down),
                      tr("The start of the next top-level annotated range (an iteration)"));
    previousMarker = make(tr("Previous Marker"), QKeySequence(Qt::CTRL | Qt::Key_Up),
                          tr("The start of the previous top-level annotated range"));
    nextOom = make(tr("Next OOM"), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_Down), tr("The next out-of-memory entry"));
    previousOom = make(tr("Previous OOM"), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_Up), tr("The previous out-of-memory entry"));
    back = make(tr("Back to Previous Selection"), QKeySequence::Back, tr("Undo the last range selection"));
    resetSelection = make(tr("Clear Selection"), QKeySequence(Qt::Key_Escape), tr("Show the whole trace in every view"));

    auto trace = [this]() -> const model::TraceColumns& { return m_doc->deviceData().trace; };
    connect(nextEvent, &QAction::triggered, this, [=, this] { go(nav::nextEvent(trace(), m_doc->currentEvent()), tr("This is the last entry.")); });
    connect(previousEvent, &QAction::triggered, this, [=, this] { go(nav::previousEvent(trace(), m_doc->currentEvent()), tr("This is the first entry.")); });
    connect(nextSameAllocation, &QAction::triggered, this, [=, this] {
        go(nav::nextOfSameAllocation(trace(), m_doc->currentEvent()), tr("No later entry of this allocation."));
    });
    connect(previousSameAllocation, &QAction::triggered, this, [=, this] {
        go(nav::previousOfSameAllocation(trace(), m_doc->currentEvent()), tr("No earlier entry of this allocation."));
    });
    connect(nextMarker, &QAction::triggered, this, [this] { go(nav::nextMarker(m_doc->markers(), m_doc->currentEvent()), tr("No later marker.")); });
    connect(previousMarker, &QAction::triggered, this, [this] {
        go(nav::previousMarker(m_doc->markers(), m_doc->currentEvent()), tr("No earlier marker."));
    });
    connect(nextOom, &QAction::triggered, this, [=, this] {
        go(nav::nextWithAction(trace(), m_doc->currentEvent(), model::Action::Oom), tr("No later oom entry."));
    });
    connect(previousOom, &QAction::triggered, this, [=, this] {
        go(nav::previousWithAction(trace(), m_doc->currentEvent(), model::Action::Oom), tr("No earlier oom entry."));
    });
    connect(back, &QAction::triggered, this, [this] { if (m_doc) m_doc->back(); });
    connect(resetSelection, &QAction::triggered, this, [this] { if (m_doc) m_doc->resetSelection(); });
    updateEnabled();
}

QAction* NavigationActions::make(const QString& text, const QKeySequence& key, const QString& tip) {
    auto* a = new QAction(text, this);
    a->setShortcut(key);
    a->setStatusTip(tip);
    a->setToolTip(QStringLiteral("%1 (%2)").arg(text, key.toString(QKeySequence::NativeText)));
    m_window->addAction(a);  // shortcuts work wherever the focus is in the window
    return a;
}

void NavigationActions::fillMenu(QMenu* menu) const {
    menu->addAction(nextEvent);
    menu->addAction(previousEvent);
    menu->addAction(nextSameAllocation);
    menu->addAction(previousSameAllocation);
    menu->addSeparator();
    menu->addAction(nextMarker);
    menu->addAction(previousMarker);
    menu->addAction(nextOom);
    menu->addAction(previousOom);
    menu->addSeparator();
    menu->addAction(back);
    menu->addAction(resetSelection);
}

void NavigationActions::setDocument(views::SnapshotDocument* doc) {
    if (m_doc) disconnect(m_doc, nullptr, this, nullptr);
    m_doc = doc;
    if (doc) {
        connect(doc, &views::SnapshotDocument::selectionChanged, this, &NavigationActions::updateEnabled);
        connect(doc, &views::SnapshotDocument::deviceChanged, this, &NavigationActions::updateEnabled);
    }
    updateEnabled();
}

void NavigationActions::go(std::optional<int64_t> target, const QString& none) {
    if (!m_doc) return;
    if (target) m_doc->setCurrentEvent(*target);
    else emit message(none);
}

void NavigationActions::updateEnabled() {
    const bool entries = m_doc && m_doc->entryCount() > 0;
    for (QAction* a : {nextEvent, previousEvent, nextSameAllocation, previousSameAllocation, nextMarker, previousMarker,
                       nextOom, previousOom})
        a->setEnabled(entries);
    back->setEnabled(m_doc && m_doc->canGoBack());
    resetSelection->setEnabled(m_doc && m_doc->selection().has_value());
}

} // namespace memlens::gui
