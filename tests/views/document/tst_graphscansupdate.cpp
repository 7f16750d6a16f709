// graphScansOf: the graph scans of a growing session, parsing only the rows not parsed before,
// equal to parsing every row again (model::GraphScans::fromStored) at every step, whether the new
// rows come from a poll (SessionFile::fetch) or from opening the file again.
#include "QtTestMain.h"
#include "GraphScanBuilder.h"

#include "document/GraphScansDocument.h"

#include "memlens/model/ParseError.h"
#include "memlens/model/SessionFile.h"
#include "memlens/model/SessionWriter.h"

#include <QTemporaryDir>
#include <QtTest>

#include <atomic>

using namespace memlens::views;
namespace model = memlens::model;

namespace {

constexpr uint64_t MiB = 1024 * 1024;

// Everything the views read of the scans, as text: two equal texts, two equal results.
QString describe(const model::GraphScans& s) {
    QStringList out;
    for (const auto& scan : s.scans()) {
        QStringList graphs;
        for (const auto& g : scan.graphs)
            graphs << QStringLiteral("%1=%2").arg(QString::fromStdString(g.root)).arg(g.retainedBytes);
        out << QStringLiteral("scan %1 it %2 %3 t%4 err '%5': %6")
                   .arg(scan.id)
                   .arg(scan.iteration)
                   .arg(QString::fromStdString(scan.phase))
                   .arg(scan.timeUs)
                   .arg(QString::fromStdString(scan.error), graphs.join(QLatin1Char(',')));
    }
    for (size_t g = 0; g < s.groups().size(); ++g) {
        const auto& group = s.groups()[g];
        QStringList points;
        for (const auto& p : group.points) points << QStringLiteral("%1/%2").arg(p.graphs).arg(p.bytes);
        out << QStringLiteral("group %1 first %2@%3: %4")
                   .arg(QString::fromStdString(group.pattern))
                   .arg(group.firstSeen)
                   .arg(group.firstScan)
                   .arg(points.join(QLatin1Char(' ')));
        for (size_t scan = 0; scan < s.scans().size(); ++scan)
            out << QStringLiteral("  growth@%1: %2").arg(scan).arg(QString::fromStdString(s.growth(g, scan).text));
    }
    out << QStringLiteral("iterations %1").arg(s.iterations().size());
    return out.join(QLatin1Char('\n'));
}

// The scan written at iteration IT: one more kept graph every eval iteration, and a temporary.
model::GraphScan scanAt(int64_t it, const std::string& phase) {
    std::vector<graphtest::Json> graphs;
    for (int64_t k = 0; k <= it / 2; ++k)
        graphs.push_back(graphtest::graph("__main__.kept[" + std::to_string(k) + "]", "__main__.kept[*]", (k + 1) * MiB, 2 * k));
    graphs.push_back(graphtest::graph("__main__.tmp", "__main__.tmp", 4096));
    model::GraphScan g;
    g.iteration = it;
    g.phase = phase;
    g.timeUs = it * 1000 + 500;
    g.json = graphtest::scanText(graphs);
    return g;
}

} // namespace

class TestGraphScansUpdate : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;

private slots:
    void incrementalEqualsFullOnAGrowingSession() {
        const std::string path = m_dir.filePath(QStringLiteral("growing.memlens")).toStdString();
        model::SessionWriter w(path, "tst_graphscansupdate");
        model::SessionFile followed(path);  // polled, as the window follows a live session
        std::shared_ptr<const model::GraphScans> polled = graphScansOf(followed.graphScans(), {}, followed.iterations(), nullptr);
        std::shared_ptr<const model::GraphScans> reopened;
        QVERIFY(polled->empty());
        for (int64_t it = 1; it <= 12; ++it) {
            const std::string phase = it % 3 == 0 ? "eval" : "train";
            w.addIteration({it, phase, it * 1000, it * 1000 + 900});
            // some iterations write no scan, some two (a request, then the iteration's own)
            if (it % 4 != 1) w.addGraphScan(scanAt(it, phase));
            if (it == 6) {
                model::GraphScan request = scanAt(it, phase);
                request.timeUs -= 100;  // sorted before the other scan of this iteration
                w.addGraphScan(request);
            }
            if (it == 9) {
                model::GraphScan broken = scanAt(it, phase);
                broken.json = "not json";
                w.addGraphScan(broken);
            }
            // a poll: only the new rows parsed
            model::SessionFile::Rows rows = followed.fetch();
            std::vector<model::SessionIteration> iterations = followed.iterations();
            iterations.insert(iterations.end(), rows.iterations.begin(), rows.iterations.end());
            auto next = graphScansOf(followed.graphScans(), rows.graphScans, iterations, polled);
            followed.apply(std::move(rows));
            polled = next;
            // the file opened again, with the scans of the previous opening
            model::SessionFile again(path);
            reopened = graphScansOf(again.graphScans(), {}, again.iterations(), reopened);
            // both equal parsing every row again
            const auto full = model::GraphScans::fromStored(again.graphScans(), again.iterations());
            QCOMPARE(polled->scans().size(), again.graphScans().size());
            QCOMPARE(describe(*polled), describe(full));
            QCOMPARE(describe(*reopened), describe(full));
        }
        QCOMPARE(polled->scans().size(), size_t(11));
        QVERIFY(!polled->groups().empty());
    }

    void previousScansThatDoNotMatchAreNotUsed() {
        const std::string a = m_dir.filePath(QStringLiteral("a.memlens")).toStdString();
        const std::string b = m_dir.filePath(QStringLiteral("b.memlens")).toStdString();
        {
            model::SessionWriter w(a, "tst");
            w.addGraphScan(scanAt(2, "train"));
            w.addGraphScan(scanAt(4, "train"));
        }
        {
            model::SessionWriter w(b, "tst");
            w.addGraphScan(scanAt(8, "eval"));
            w.addGraphScan(scanAt(10, "eval"));
            w.addGraphScan(scanAt(12, "eval"));
        }
        model::SessionFile fa(a), fb(b);
        const auto fullA = describe(model::GraphScans::fromStored(fa.graphScans(), fa.iterations()));
        // more scans than rows: not of these rows
        auto ofB = graphScansOf(fb.graphScans(), {}, fb.iterations(), nullptr);
        QCOMPARE(describe(*graphScansOf(fa.graphScans(), {}, fa.iterations(), ofB)), fullA);
        // scans not read from a session (no row ids)
        auto loose = std::make_shared<const model::GraphScans>(
            std::vector<model::GraphScanData>{model::parseGraphScanJson(scanAt(2, "train").json, 2, "train")});
        QCOMPARE(describe(*graphScansOf(fa.graphScans(), {}, fa.iterations(), loose)), fullA);
    }

    void cancelled() {
        const std::string path = m_dir.filePath(QStringLiteral("c.memlens")).toStdString();
        {
            model::SessionWriter w(path, "tst");
            w.addGraphScan(scanAt(2, "train"));
        }
        model::SessionFile f(path);
        std::atomic<bool> cancel{true};
        QVERIFY_THROWS_EXCEPTION(model::Cancelled, graphScansOf(f.graphScans(), {}, f.iterations(), nullptr, &cancel));
    }
};

MEMLENS_CORE_TEST_MAIN(TestGraphScansUpdate)
#include "tst_graphscansupdate.moc"
