#include "ViewCatalog.h"

#include "GraphScansBinding.h"

#include "sites/AllocationSitesView.h"
#include "blockmap/BlockMapView.h"
#include "breakdown/BreakdownView.h"
#include "events/EventsView.h"
#include "graphs/GraphView.h"
#include "graphs/RetainedGraphsView.h"
#include "document/SnapshotDocument.h"
#include "stack/StackView.h"
#include "timeline/TimelineView.h"
#include "whatif/WhatIfView.h"
#include "findings/FindingsView.h"
#include "iterdiff/IterationDiffView.h"
#include "SessionLoader.h"

namespace memlens::gui {

namespace {

template <typename View>
ViewHandle make(QWidget* parent) {
    auto* v = new View(parent);
    return {v, [v](views::SnapshotDocument* d) { v->setDocument(d); }};
}

// The retained-graph views follow the graph scans of the document's session, if it has one.
template <typename View>
ViewHandle makeGraphView(QWidget* parent) {
    auto* v = new View(parent);
    return {v,
            [v](views::SnapshotDocument* d) {
                v->setDocument(d);
                v->setGraphScans(graphScansFor(d));
            }};
}

// The doctor reads the agent's records of the document's session too, if it has one.
ViewHandle makeFindingsView(QWidget* parent) {
    auto* v = new views::FindingsView(parent);
    return {v, [v](views::SnapshotDocument* d) {
                const SessionState* session = d ? SessionState::of(d) : nullptr;
                v->setDocument(d, session ? QString::fromStdString(session->file().path()) : QString());
            }};
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
        {QStringLiteral("whatif"), QObject::tr("What-if"), QStringLiteral("whatIfDock")},
        {QStringLiteral("findings"), QObject::tr("Findings"), QStringLiteral("findingsDock")},
        {QStringLiteral("iterdiff"), QObject::tr("Iteration diff"), QStringLiteral("iterationDiffDock")},
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
    if (name == QLatin1String("blocks")) return make<views::BlockMapView>(parent);
    if (name == QLatin1String("stack")) return make<views::StackView>(parent);
    if (name == QLatin1String("breakdown")) return make<views::BreakdownView>(parent);
    if (name == QLatin1String("sites")) return make<views::AllocationSitesView>(parent);
    if (name == QLatin1String("graphs")) return makeGraphView<views::RetainedGraphsView>(parent);
    if (name == QLatin1String("graph")) return makeGraphView<views::GraphView>(parent);
    if (name == QLatin1String("whatif")) return make<views::WhatIfView>(parent);
    if (name == QLatin1String("findings")) return makeFindingsView(parent);
    if (name == QLatin1String("iterdiff")) return make<views::IterationDiffView>(parent);
    return {};
}

} // namespace memlens::gui
