// The retained-graph docks of the window: the graph scans of a session document (read once, kept
// as the document's child), nothing for a plain snapshot, the docks shown only while a session
// with graph scans is current, and the two views registered in the catalog.
#include "GraphScansBinding.h"
#include "MainWindow.h"
#include "QtTestMain.h"
#include "SessionLoader.h"
#include "ViewCatalog.h"
#include "IterationStrip.h"
#include "SessionPanel.h"

#include "document/JobTracker.h"

#include "memlens/model/SessionWriter.h"
#include "document/GraphScansDocument.h"
#include "graphs/GraphView.h"
#include "core/LoadedSnapshot.h"
#include "graphs/RetainedGraphsView.h"
#include "document/SnapshotDocument.h"

#include <QDockWidget>
#include <QMainWindow>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QApplication>
#include <QtTest>

using namespace memlens;

namespace {

// A session of 4 iterations (train, train, eval, eval) and a scan after each eval iteration:
// one more kept output each time.
QString writeSession(const QString& path, bool withScans) {
    model::SessionWriter w(path.toStdString(), "tst_graphdocks");
    for (int i = 1; i <= 4; ++i) {
        model::SessionIteration it;
        it.index = i;
        it.phase = i <= 2 ? "train" : "eval";
        it.startUs = i * 1000;
        it.endUs = i * 1000 + 900;
        w.addIteration(it);
        if (!withScans || i <= 2) continue;
        QStringList graphs;
        for (int k = 0; k + 2 < i; ++k)
            graphs << QStringLiteral(R"({"root": "validate.outs[%1]", "pattern": "validate.outs[*]", "nodes": 2,
                "retained_bytes": 4096, "saved_tensors_alive": 1, "first_seen": %2,
                "nodes_list": [{"name": "MulBackward0", "saved": [{"name": "self", "state": "alive", "shape": [1024],
                  "dtype": "float32", "device": "cuda:0", "bytes": 4096, "ptr": 139637976727552}]},
                  {"name": "torch::autograd::AccumulateGrad", "saved": []}],
                "edges": [[0, 1]]})")
                          .arg(k)
                          .arg(k + 3);
        model::GraphScan g;
        g.iteration = i;
        g.phase = "eval";
        g.timeUs = i * 1000 + 950;
        g.json = QStringLiteral(R"({"partial": false, "graphs": [%1]})").arg(graphs.join(QLatin1Char(','))).toStdString();
        w.addGraphScan(g);
    }
    w.finish(model::sessionNowUs());
    return path;
}

// A document as the window makes it: a session's carries the session (SessionState).
std::unique_ptr<views::SnapshotDocument> documentOf(const QString& path) {
    if (!gui::isSessionFile(path))
        return std::make_unique<views::SnapshotDocument>(views::LoadedSnapshot::fromSnapshot(model::Snapshot{}, path.toStdString()));
    gui::SessionLoadResult loaded = gui::loadSession(path.toStdString(), 0, 0, {});
    auto doc = std::make_unique<views::SnapshotDocument>(loaded.loaded);
    new gui::SessionState(std::move(loaded), doc.get());
    return doc;
}

} // namespace

class TestGraphDocks : public QObject {
    Q_OBJECT
private slots:
    void catalogHasTheTwoViews() {
        QVERIFY(gui::viewNames().contains(QStringLiteral("graphs")));
        QVERIFY(gui::viewNames().contains(QStringLiteral("graph")));
        QWidget parent;
        const gui::ViewHandle list = gui::createView(QStringLiteral("graphs"), &parent);
        const gui::ViewHandle graph = gui::createView(QStringLiteral("graph"), &parent);
        QVERIFY(qobject_cast<views::RetainedGraphsView*>(list.widget));
        QVERIFY(qobject_cast<views::GraphView*>(graph.widget));
    }

    void scansOfASessionDocument() {
        QTemporaryDir dir;
        auto doc = documentOf(writeSession(dir.filePath(QStringLiteral("run.memlens")), true));
        views::GraphScansDocument* g = gui::graphScansFor(doc.get());
        QVERIFY(g);
        QCOMPARE(g->parent(), doc.get());
        QCOMPARE(gui::graphScansFor(doc.get()), g);  // read once
        QCOMPARE(g->scanCount(), 2);
        QVERIFY(gui::hasGraphScans(doc.get()));
        // growth per eval iteration, from the session's iterations
        const auto& scans = g->scans();
        QCOMPARE(scans.growth(0, 1).text, std::string("+1 graph, +4 KiB per eval iteration since iteration 3"));
        // the views of a handle follow the document
        QWidget parent;
        const gui::ViewHandle list = gui::createView(QStringLiteral("graphs"), &parent);
        list.setDocument(doc.get());
        auto* panel = qobject_cast<views::RetainedGraphsView*>(list.widget);
        QCOMPARE(panel->graphScans(), g);
        QVERIFY(panel->placeholderText().isEmpty());
        list.setDocument(nullptr);
        QVERIFY(!panel->graphScans());
    }

    void noScansForPlainSnapshotsAndScanlessSessions() {
        QTemporaryDir dir;
        auto plain = documentOf(QStringLiteral(MEMLENS_SOURCE_DIR "/resources/example.pickle"));
        QVERIFY(!gui::graphScansFor(plain.get()));
        QVERIFY(!gui::hasGraphScans(plain.get()));
        auto none = documentOf(writeSession(dir.filePath(QStringLiteral("none.memlens")), false));
        views::GraphScansDocument* g = gui::graphScansFor(none.get());
        QVERIFY(g);  // a session: the views say it has no scans
        QCOMPARE(g->scanCount(), 0);
        QVERIFY(!gui::hasGraphScans(none.get()));
        QVERIFY(!gui::graphScansFor(nullptr));
    }

    void docksShownOnlyForSessionsWithScans() {
        QTemporaryDir dir;
        auto session = documentOf(writeSession(dir.filePath(QStringLiteral("run.memlens")), true));
        auto plain = documentOf(QStringLiteral(MEMLENS_SOURCE_DIR "/resources/example.pickle"));
        QMainWindow w;
        auto* a = new QDockWidget(QStringLiteral("Retained graphs"), &w);
        auto* b = new QDockWidget(QStringLiteral("Graph"), &w);
        w.addDockWidget(Qt::BottomDockWidgetArea, a);
        w.addDockWidget(Qt::BottomDockWidgetArea, b);
        w.show();
        gui::showGraphDocks(a, b, plain.get(), true);
        QVERIFY(!a->isVisible() && !b->isVisible());
        gui::showGraphDocks(a, b, session.get(), true);
        QVERIFY(a->isVisible() && b->isVisible());
        gui::showGraphDocks(a, b, nullptr, false);  // behind the start page: left alone
        QVERIFY(a->isVisible());
    }

    void theWindowHidesThemForASnapshot() {
        gui::MainWindow w(false);
        w.show();
        QVERIFY(w.dock(QStringLiteral("graphs")));
        QVERIFY(w.dock(QStringLiteral("graph")));
        QSignalSpy opened(&w, &gui::MainWindow::documentOpened);
        w.openFiles({QStringLiteral(MEMLENS_SOURCE_DIR "/resources/example.pickle")});
        QVERIFY(opened.wait(60000));
        QVERIFY(!w.dock(QStringLiteral("graphs"))->isVisible());
        QVERIFY(!w.dock(QStringLiteral("graph"))->isVisible());
        QVERIFY(w.dock(QStringLiteral("timeline"))->isVisible());
    }

    // The doctor on that session: validate.outs[*] keeps one more graph per eval iteration (the
    // scans hold 1, then 2): a graph-kept finding, named in the banner; selecting it selects a
    // graph of that group in Graph and points out its iterations on the strip.
    void aKeptGraphFindingSelectsItsGraph() {
        QTemporaryDir dir;
        const QString path = writeSession(dir.filePath(QStringLiteral("s.memlens")), true);
        gui::MainWindow w(false);
        w.show();
        QSignalSpy opened(&w, &gui::MainWindow::documentOpened);
        w.openFiles({path});
        QVERIFY(opened.wait(60000));
        QVERIFY(views::JobTracker::waitForAllIdle(60000));
        QVERIFY2(w.findingsBannerText().contains(QStringLiteral("validate.outs[*]")), qPrintable(w.findingsBannerText()));
        w.selectFinding(0);
        views::GraphScansDocument* g = gui::graphScansFor(w.currentDocument());
        QVERIFY(g);
        QCOMPARE(g->currentScan(), g->scanCount() - 1);
        QVERIFY(g->selectedGraphData());
        QCOMPARE(QString::fromStdString(g->selectedGraphData()->pattern), QStringLiteral("validate.outs[*]"));
        QVERIFY(!w.sessionPanel()->strip()->highlighted().empty());
    }
};

MEMLENS_GUI_TEST_MAIN(TestGraphDocks)
#include "tst_graphdocks.moc"
