#pragma once
// The retained-graph views in the window: the graph scans of the session a document was opened
// from (a .memlens file), kept as the document's child, and the two docks ("Retained graphs",
// "Graph") shown while such a session with graph scans is the current tab.
class QDockWidget;

namespace memlens::views {
class GraphScansDocument;
class SnapshotDocument;
} // namespace memlens::views

namespace memlens::gui {

// The scans of DOC's session (its SessionState, which parsed them off the GUI thread), as a
// document made on first use; nullptr for a plain snapshot. A session without scans gives a
// document with none (the views say why).
views::GraphScansDocument* graphScansFor(views::SnapshotDocument* doc);
// Whether DOC's session has at least one graph scan.
bool hasGraphScans(views::SnapshotDocument* doc);
// After the window polled the session or selected an iteration: takes in the scans the poll
// parsed and shows the scan at or before the selected iteration.
void syncGraphScans(views::SnapshotDocument* doc);
// Shows the two docks while DOC's session has graph scans, hides them otherwise; raises them when
// a session with retained graphs becomes current. docksShown: false while the start page covers
// the docks (nothing is changed then).
void showGraphDocks(QDockWidget* graphs, QDockWidget* graph, views::SnapshotDocument* doc, bool docksShown);

} // namespace memlens::gui
