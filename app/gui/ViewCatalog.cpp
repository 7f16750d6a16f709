#include "ViewCatalog.h"

#include "GraphScansBinding.h"
#include "PlaceholderView.h"

#include "memlens/views/EventsView.h"
#include "memlens/views/GraphView.h"
#include "memlens/views/RetainedGraphsView.h"
#include "memlens/views/SnapshotDocument.h"
#include "memlens/views/TimelineView.h"

#if __has_include("memlens/views/BlockMapView.h")
#include "memlens/views/BlockMapView.h"
#define MEMLENS_HAVE_BLOCK_MAP 1
#endif
#if __has_include("memlens/views/StackView.h")
#include "memlens/views/StackView.h"
#define MEMLENS_HAVE_STACK 1
#endif
#if __has_include("memlens/views/BreakdownView.h")
#include "memlens/views/BreakdownView.h"
#define MEMLENS_HAVE_BREAKDOWN 1
#endif
#if __has_include("memlens/views/AllocationSitesView.h")
#include "memlens/views/AllocationSitesView.h"
#define MEMLENS_HAVE_SITES 1
#endif

namespace memlens::gui {

namespace {

template <typename View>
ViewHandle make(QWidget* parent) {
    auto* v = new View(parent);
    return {v, [v](views::SnapshotDocument* d) { v->setDocument(d); }, false};
}

// The retained-graph views follow the graph scans of the document's session, if it has one.
template <typename View>
ViewHandle makeGraphView(QWidget* parent) {
    auto* v = new View(parent);
    return {v,
            [v](views::SnapshotDocument* d) {
                v->setDocument(d);
                v->setGraphScans(graphScansFor(d));
            },
            false};
}

[[maybe_unused]] ViewHandle placeholder(const QString& title, const QString& purpose, QWidget* parent) {
    auto* v = new PlaceholderView(title, purpose, parent);
    return {v, [v](views::SnapshotDocument* d) { v->setDocument(d); }, true};
}

} // namespace

QList<ViewInfo> viewCatalog() {
    return {
        {QStringLiteral("timeline"), QObject::tr("Timeline"), QStringLiteral("timelineDock")},
        {QStringLiteral("blocks"), QObject::tr("Block map"), QStringLiteral("blockMapDock")},
        {QStringLiteral("events"), QObject::tr("Events"), QStringLiteral("eventsDock")},
        {QStringLiteral("stack"), QObject::tr("Stack"), QStringLiteral("stackDock")},
        {QStringLiteral("breakdown"), QObject::tr("Memory breakdown"), QStringLiteral("breakdownDock")},
        {QStringLiteral("sites"), QObject::tr("Allocation sites"), QStringLiteral("sitesDock")},
        {QStringLiteral("graphs"), QObject::tr("Retained graphs"), QStringLiteral("retainedGraphsDock")},
        {QStringLiteral("graph"), QObject::tr("Graph"), QStringLiteral("graphDock")},
    };
}

QStringList viewNames() {
    QStringList out;
    for (const ViewInfo& v : viewCatalog()) out << v.name;
    return out;
}

ViewHandle createView(const QString& name, QWidget* parent) {
    if (name == QLatin1String("timeline")) return make<views::TimelineView>(parent);
    if (name == QLatin1String("events")) return make<views::EventsView>(parent);
    if (name == QLatin1String("blocks")) {
#ifdef MEMLENS_HAVE_BLOCK_MAP
        return make<views::BlockMapView>(parent);
#else
        return placeholder(QObject::tr("Block map"), QObject::tr("Segments and blocks at the current entry."), parent);
#endif
    }
    if (name == QLatin1String("stack")) {
#ifdef MEMLENS_HAVE_STACK
        return make<views::StackView>(parent);
#else
        return placeholder(QObject::tr("Stack"), QObject::tr("The stack of the selected allocation."), parent);
#endif
    }
    if (name == QLatin1String("breakdown")) {
#ifdef MEMLENS_HAVE_BREAKDOWN
        return make<views::BreakdownView>(parent);
#else
        return placeholder(QObject::tr("Memory breakdown"), QObject::tr("Where the reserved memory goes."), parent);
#endif
    }
    if (name == QLatin1String("sites")) {
#ifdef MEMLENS_HAVE_SITES
        return make<views::AllocationSitesView>(parent);
#else
        return placeholder(QObject::tr("Allocation sites"), QObject::tr("Live memory by the code that allocated it."), parent);
#endif
    }
    if (name == QLatin1String("graphs")) return makeGraphView<views::RetainedGraphsView>(parent);
    if (name == QLatin1String("graph")) return makeGraphView<views::GraphView>(parent);
    return {};
}

} // namespace memlens::gui
