// Sessions (.memlens) in a real window, offscreen: a session written at test time with
// model::SessionWriter -- A WRITER REPLAYING REAL SNAPSHOTS in place of a GPU job (a stored real
// PyTorch snapshot from MEMLENS_SNAPSHOTS_DIR and the bundled example as its allocator snapshots,
// made-up NVML and torch samples) -- opens in a tab; the iteration strip has the iterations per
// phase; Navigate > Next/Previous Iteration and a click on the strip switch the snapshot; a CPU
// session (no snapshots) opens with its note; a live session grows as the writer appends rows;
// a damaged session leaves a one-line banner; the window and the process plot are not blank.
// With memlens-cli built: a real recorder followed live (a fake agent replaying a real snapshot on
// the window's request, and a real CPU job whose graph scan the window asks for).
#include "AttachDialog.h"
#include "GraphScanBuilder.h"
#include "GraphScansBinding.h"
#include "IterationStrip.h"
#include "MainWindow.h"
#include "QtTestMain.h"
#include "WindowOpens.h"
#include "SpawnedProcess.h"
#include "SessionLoader.h"
#include "SessionPanel.h"

#include "memlens/model/SessionFile.h"
#include "memlens/model/SessionWriter.h"
#include "blockmap/BlockMapCanvas.h"
#include "blockmap/BlockMapView.h"
#include "document/GraphScansDocument.h"
#include "timeline/QCustomPlotInclude.h"
#include "document/SnapshotDocument.h"
#include "timeline/TimelineView.h"

#include <QAction>
#include <QDockWidget>
#include <QFile>
#include <QPushButton>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QApplication>
#include <QtTest>

#include <fstream>
#include <set>
#include <sstream>
#include <unistd.h>

using memlens::gui::MainWindow;
using memlens::gui::SessionState;
namespace model = memlens::model;

namespace {

std::string readAll(const QString& path) {
    std::ifstream in(path.toStdString(), std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

constexpr int64_t MiB = 1024 * 1024;

int distinctColours(const QImage& image) {
    std::set<QRgb> colours;
    const QImage img = image.convertToFormat(QImage::Format_RGB32);
    for (int y = 0; y < img.height(); y += 3)
        for (int x = 0; x < img.width(); x += 3) colours.insert(img.pixel(x, y));
    return static_cast<int>(colours.size());
}

} // namespace

class TestSessions : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;
    const QString m_example = QStringLiteral(MEMLENS_SOURCE_DIR "/resources/example.pickle");
    QString m_real = QStringLiteral(MEMLENS_SNAPSHOTS_DIR "/Yiyi-philosophy__LLM-inference__oom_snapshot.pickle");
    // the bundled example's trace starts at 1730000000000064 µs: the made-up samples overlap it
    int64_t m_t0 = 1'730'000'000'000'000;

    model::SessionProcess process(bool cuda) const {
        model::SessionProcess p;
        p.pid = ::getpid();
        p.host = "test";
        p.command = {"python3", "train.py"};
        p.python = "3.11.2";
        p.torch = cuda ? "2.3.0+cu121" : "1.13.0";
        p.cuda = cuda ? "12.1" : "";
        p.allocatorSnapshots = cuda;
        if (!cuda) p.snapshotsNote = "torch was built without CUDA";
        p.startedUs = m_t0;
        return p;
    }

    // iterations [first, last]: train up to 12, eval after; samples at each iteration's end
    void addIterations(model::SessionWriter& w, int first, int last) {
        for (int i = first; i <= last; ++i) {
            model::SessionIteration it;
            it.index = i;
            it.phase = i <= 12 ? "train" : "eval";
            it.startUs = m_t0 + int64_t(i - 1) * 100'000;
            it.endUs = it.startUs + 100'000;
            w.addIteration(it);
            model::DeviceSample nvml, torch;
            nvml.timeUs = torch.timeUs = it.endUs;
            nvml.source = "nvml";
            nvml.processUsed = (1800 + 10 * i) * MiB;
            nvml.deviceUsed = (1000 + 10 * i) * MiB;
            nvml.deviceTotal = 16384 * MiB;
            torch.source = "torch";
            torch.reserved = (1300 + 10 * i) * MiB;
            torch.allocated = (900 + 5 * i) * MiB;
            w.addSamples({nvml, torch});
        }
    }

    int64_t addSnapshot(model::SessionWriter& w, int iteration, const QString& pickle) {
        model::SessionSnapshot s;
        s.iteration = iteration;
        s.trigger = model::trigger::kIteration;
        s.timeUs = m_t0 + int64_t(iteration) * 100'000;
        return w.addSnapshot(s, readAll(pickle)).id;
    }

    // The session file exists and its header is written (the recorder creates it at start).
    static bool waitForReadable(const QString& path) {
        return QTest::qWaitFor([&] {
            if (!QFile::exists(path)) return false;
            try {
                model::SessionFile f(path.toStdString());
                return true;
            } catch (const std::exception&) {
                return false;
            }
        }, 30000);
    }

    // The event loop may have seen the process end already (waitForFinished is false then).
    static bool finished(SpawnedProcess& p, int ms) { return p.waitForFinished(ms); }

    // Shows W (1400x900) with PATH opened and loaded.
    static bool openIn(MainWindow& w, QSignalSpy& opened, const QString& path) {
        w.resize(1400, 900);
        w.show();
        w.openFiles({path});
        return waitForOpens(w, opened, 1);
    }

    static bool waitForOpens(MainWindow& w, QSignalSpy& opened, int count) {
        return memlens::test::waitForOpens(w, opened, count, 30000);
    }

private slots:
    void initTestCase() {
        QStandardPaths::setTestModeEnabled(true);
        if (!QFile::exists(m_real)) m_real = m_example;  // without the fixtures: the example twice
    }

    void opensASessionAndStepsIterations() {
        const QString path = m_dir.filePath(QStringLiteral("gpu-replay.memlens"));
        int64_t first = 0, second = 0;
        {
            model::SessionWriter w(path.toStdString(), "tst_sessions (writer replaying real snapshots)");
            w.setProcess(process(true));
            addIterations(w, 1, 17);
            first = addSnapshot(w, 5, m_real);
            second = addSnapshot(w, 15, m_example);
            w.finish(model::sessionNowUs());
        }
        MainWindow w(false);
        QSignalSpy opened(&w, &MainWindow::documentOpened);
        QVERIFY(openIn(w, opened, path));
        QVERIFY2(w.bannerMessage().isEmpty(), qPrintable(w.bannerMessage()));
        auto* doc = w.currentDocument();
        QVERIFY(doc);
        SessionState* session = SessionState::of(doc);
        QVERIFY(session);
        QCOMPARE(session->snapshotId(), second);  // the latest
        QVERIFY(doc->entryCount() > 0);
        auto* panel = w.sessionPanel();
        QVERIFY(w.dock(QStringLiteral("timeline"))->isVisible());
        QVERIFY(panel->isVisible());
        auto* strip = panel->strip();
        QCOMPARE(strip->count(), 17);
        QCOMPARE(strip->countOfPhase(QStringLiteral("train")), 12);
        QCOMPARE(strip->countOfPhase(QStringLiteral("eval")), 5);
        QCOMPARE(strip->current(), int64_t(15));
        QVERIFY2(panel->noteText().contains(QStringLiteral("17 iterations (12 train, 5 eval)")), qPrintable(panel->noteText()));
        QVERIFY2(panel->figuresText().contains(QStringLiteral("NVML process total")), qPrintable(panel->figuresText()));
        QCOMPARE(panel->sampleCount(), 34);
        QVERIFY(panel->processFigures().has_value());
        QCOMPARE(*panel->processFigures()->processTotal, uint64_t((1800 + 10 * 15) * MiB));

        // next iteration: 16 has no snapshot, the views keep snapshot 2
        w.nextIterationAction()->trigger();
        QCOMPARE(strip->current(), int64_t(16));
        QCOMPARE(SessionState::of(w.currentDocument())->snapshotId(), second);
        QCOMPARE(w.documentCount(), 1);
        // a click on iteration 5 loads its snapshot into the same tab
        const int x5 = int((4.5 / 17.0) * (strip->width() - 2)) + 1;
        QCOMPARE(strip->iterationAt(x5), int64_t(5));
        QTest::mouseClick(strip, Qt::LeftButton, Qt::NoModifier, QPoint(x5, strip->height() / 2));
        QVERIFY(waitForOpens(w, opened, 2));
        QCOMPARE(w.documentCount(), 1);
        QCOMPARE(SessionState::of(w.currentDocument())->snapshotId(), first);
        QCOMPARE(w.sessionPanel()->strip()->current(), int64_t(5));
        // previous, then next: 4 has none; 5 again is the shown one (no reload)
        w.previousIterationAction()->trigger();
        QCOMPARE(strip->current(), int64_t(4));
        w.nextIterationAction()->trigger();
        QCOMPARE(strip->current(), int64_t(5));
        // ... and on to 15, whose snapshot replaces it
        for (int i = 0; i < 10; ++i) w.nextIterationAction()->trigger();
        QVERIFY(waitForOpens(w, opened, 3));
        QCOMPARE(SessionState::of(w.currentDocument())->snapshotId(), second);
        QCOMPARE(strip->current(), int64_t(15));

        // what the window still has to lay out and replot (posted events) done before the grab
        QCoreApplication::sendPostedEvents(nullptr, QEvent::LayoutRequest);
        QCoreApplication::processEvents();
        const QImage shot = w.grab().toImage();
        if (qEnvironmentVariableIsSet("MEMLENS_SCREENSHOT_DIR"))
            shot.save(qEnvironmentVariable("MEMLENS_SCREENSHOT_DIR") + QStringLiteral("/session.png"));
        QVERIFY2(distinctColours(shot) > 20, "the window is blank");
        QVERIFY2(distinctColours(static_cast<QWidget*>(panel->findChild<QWidget*>(QStringLiteral("processPlot")))->grab().toImage()) > 3,
                 "the process plot is blank");
        QVERIFY2(distinctColours(strip->grab().toImage()) >= 3, "the strip is blank");
    }

    // NVML samples taken while the snapshot's trace ran are drawn on the timeline (what
    // nvidia-smi showed, above reserved), on the index axis and on the time axis.
    void drawsNvidiaSmiOnTheTimeline() {
        const QString path = m_dir.filePath(QStringLiteral("nvidia-smi.memlens"));
        // the bundled example's trace runs from 1730000000000064 to 1730000001074715 µs
        // (Python's pickle); samples every 100 ms from 50 ms before to 50 ms after, on NVML device
        // 2 only (CUDA_VISIBLE_DEVICES=2: torch's cuda:0)
        const int64_t first = 1730000000000064, last = 1730000001074715;
        std::vector<int64_t> times;
        for (int64_t t = first - 50'000; t <= last + 50'000; t += 100'000) times.push_back(t);
        {
            model::SessionWriter w(path.toStdString(), "tst_sessions (writer replaying the bundled example)");
            model::SessionProcess p = process(true);
            p.startedUs = first - 1'000'000;
            w.setProcess(p);
            std::vector<model::DeviceSample> samples;
            for (size_t i = 0; i < times.size(); ++i) {
                for (int device : {0, 2}) {
                    model::DeviceSample s;
                    s.timeUs = times[i];
                    s.device = device;
                    s.source = "nvml";
                    s.processUsed = device == 2 ? int64_t(2048 + i) * MiB : 0;
                    samples.push_back(s);
                }
            }
            w.addSamples(samples);
            model::SessionSnapshot snap;
            snap.iteration = 1;
            snap.trigger = model::trigger::kIteration;
            snap.timeUs = last;
            w.addSnapshot(snap, readAll(m_example));
            w.finish(model::sessionNowUs());
        }
        MainWindow w(false);
        QSignalSpy opened(&w, &MainWindow::documentOpened);
        QVERIFY(openIn(w, opened, path));
        auto* timeline = qobject_cast<memlens::views::TimelineView*>(w.dock(QStringLiteral("timeline"))->widget());
        QVERIFY(timeline);
        const auto& trace = w.currentDocument()->deviceData().trace;
        QCOMPARE(trace.timeUs.front(), first);
        QCOMPARE(trace.timeUs.back(), last);
        // drawn: the sample in force at the start (times[0], before the trace), at x 0, then those
        // taken while the trace ran
        const auto inSpan = std::count_if(times.begin(), times.end(), [&](int64_t t) { return t >= first && t <= last; });
        const auto& placed = timeline->processSamples();
        QCOMPARE(int64_t(placed.size()), int64_t(inSpan + 1));
        QCOMPARE(placed.front().x, 0.0);
        QCOMPARE(placed.front().bytes, double(2048 * MiB));
        QCOMPARE(placed.back().bytes, double((2048 + inSpan) * MiB));
        for (size_t k = 1; k < placed.size(); ++k) {
            // index axis: the entry in force at the sample's time
            const int64_t t = times[k];
            const auto entry = std::upper_bound(trace.timeUs.begin(), trace.timeUs.end(), t) - trace.timeUs.begin() - 1;
            QVERIFY2(placed[k].x >= double(entry) && placed[k].x < double(entry + 1), qPrintable(QString::number(k)));
        }
        timeline->redraw();
        QVERIFY(timeline->plot()->yAxis->range().upper >= placed.back().bytes);  // above reserved, in view
        timeline->setTimeAxis(true);
        QCOMPARE(timeline->processSamples()[1].x, double(times[1] - first));
        // the process plot shades the trace's span, in seconds since the job started
        const auto span = w.sessionPanel()->traceSpanSeconds();
        QVERIFY(span.has_value());
        QCOMPARE(span->first, 1.0);  // the job started 1 s before the first entry
        QCOMPARE(span->second, 1.0 + double(last - first) / 1e6);
        // the breakdown's process figure: the NVML sample nearest to the snapshot, on device 2
        QCOMPARE(*w.sessionPanel()->processFigures()->processTotal, uint64_t((2048 + times.size() - 1) * MiB));
    }

    // A retained graph selected in a session: the block map outlines the blocks its CUDA storages
    // are in (two blocks of the bundled example's final state, by Python's pickle: 16 MiB at
    // 0x7f3a5a000000 and 1 MiB at 0x7f3a5b080800), not those of storages elsewhere or on the CPU.
    void marksTheBlocksAGraphHolds() {
        const QString path = m_dir.filePath(QStringLiteral("graph-blocks.memlens"));
        {
            model::SessionWriter w(path.toStdString(), "tst_sessions (writer replaying the bundled example)");
            w.setProcess(process(true));
            addIterations(w, 1, 2);
            addSnapshot(w, 2, m_example);
            graphtest::Json held = graphtest::graph("__main__.kept[0]", "__main__.kept[*]", 17 * MiB, 2);
            held["device"] = "cuda:0";
            held["storages"] = {{{"ptr", 0x7f3a5a000000 + 4096}, {"bytes", 8 * MiB}, {"device", "cuda:0"}},
                                {{"ptr", 0x7f3a5b080800}, {"bytes", MiB}, {"device", "cuda:0"}},
                                {{"ptr", 0x10000}, {"bytes", 4096}, {"device", "cuda:0"}},        // in no block
                                {{"ptr", 0x7f3a5b200000}, {"bytes", 4096}, {"device", "cpu"}},    // not CUDA
                                {{"ptr", 0x7f3a5b500000}, {"bytes", 4096}, {"device", "cuda:1"}}}; // another GPU
            graphtest::Json other = graphtest::graph("__main__.tmp", "__main__.tmp", 4096, 2);
            model::GraphScan scan;
            scan.iteration = 2;
            scan.phase = "train";
            scan.timeUs = m_t0 + 200'000;
            scan.json = graphtest::scanText({held, other});
            w.addGraphScan(scan);
            w.finish(model::sessionNowUs());
        }
        MainWindow w(false);
        QSignalSpy opened(&w, &MainWindow::documentOpened);
        QVERIFY(openIn(w, opened, path));
        auto* blocks = qobject_cast<memlens::views::BlockMapView*>(w.dock(QStringLiteral("blocks"))->widget());
        QVERIFY(blocks);
        auto* canvas = blocks->findChild<memlens::views::BlockMapCanvas*>();
        QVERIFY(canvas);
        auto* scans = memlens::gui::graphScansFor(w.currentDocument());
        QVERIFY(scans && scans->scanCount() == 1);
        // the largest graph is selected first
        QVERIFY(scans->selectedGraphData());
        QCOMPARE(QString::fromStdString(scans->selectedGraphData()->root), QStringLiteral("__main__.kept[0]"));
        std::set<uint64_t> outlined;
        for (const auto& [segment, block] : canvas->markedBlocks())
            outlined.insert(canvas->state()->segments[segment].blocks[block].address);
        QCOMPARE(outlined, (std::set<uint64_t>{0x7f3a5a000000, 0x7f3a5b080800}));
        QVERIFY2(blocks->totalsText().contains(QStringLiteral("2 blocks, <b>17 MiB</b>, hold what __main__.kept[0] keeps alive")),
                 qPrintable(blocks->totalsText()));
        // another graph, without CUDA storages: nothing outlined
        scans->selectGraph(1 - scans->selectedGraph());
        QVERIFY(canvas->markedBlocks().empty());
        QVERIFY(!blocks->totalsText().contains(QStringLiteral("keeps alive")));
    }

    void opensACpuSessionWithoutSnapshots() {
        const QString path = m_dir.filePath(QStringLiteral("cpu.memlens"));
        {
            model::SessionWriter w(path.toStdString(), "tst_sessions");
            w.setProcess(process(false));
            addIterations(w, 1, 14);
            w.finish(model::sessionNowUs());
        }
        MainWindow w(false);
        w.show();
        QSignalSpy opened(&w, &MainWindow::documentOpened);
        w.openFiles({path});
        QVERIFY(waitForOpens(w, opened, 1));
        QVERIFY(w.currentDocument());
        QCOMPARE(w.currentDocument()->entryCount(), int64_t(0));
        auto* panel = w.sessionPanel();
        QVERIFY2(panel->noteText().contains(QStringLiteral("no allocator snapshots: the job ran without CUDA")), qPrintable(panel->noteText()));
        QCOMPARE(panel->strip()->count(), 14);
        QCOMPARE(panel->strip()->countOfPhase(QStringLiteral("eval")), 2);
        QCOMPARE(panel->strip()->current(), int64_t(14));
        w.previousIterationAction()->trigger();
        QCOMPARE(panel->strip()->current(), int64_t(13));
        QVERIFY(panel->findChild<QWidget*>(QStringLiteral("processPlot"))->isVisible());  // its samples are drawn
    }

    void followsALiveSession() {
        const QString path = m_dir.filePath(QStringLiteral("live.memlens"));
        model::SessionWriter writer(path.toStdString(), "tst_sessions (live)");
        writer.setProcess(process(true));
        addIterations(writer, 1, 3);
        MainWindow w(false);
        w.setPollInterval(50);
        w.show();
        QSignalSpy opened(&w, &MainWindow::documentOpened);
        w.openFiles({path});
        QVERIFY(waitForOpens(w, opened, 1));
        auto* panel = w.sessionPanel();
        QVERIFY(SessionState::of(w.currentDocument())->file().live());
        QVERIFY2(panel->noteText().contains(QStringLiteral("live")), qPrintable(panel->noteText()));
        QCOMPARE(panel->strip()->count(), 3);
        QCOMPARE(panel->strip()->current(), int64_t(3));
        QCOMPARE(panel->sampleCount(), 6);
        // File > Attach lists it: the writer (this process) has it open and it is live
        bool listed = false;
        for (const auto& r : memlens::gui::findRecordingSessions())
            listed = listed || QFileInfo(r.path).canonicalFilePath() == QFileInfo(path).canonicalFilePath();
        QVERIFY(listed);
        // the job goes on: rows appended after opening show up
        addIterations(writer, 4, 6);
        QVERIFY(QTest::qWaitFor([&] { return panel->strip()->count() == 6; }, 10000));
        QCOMPARE(panel->sampleCount(), 12);
        QCOMPARE(panel->strip()->current(), int64_t(6));  // following the end
        // a new snapshot is loaded
        const int64_t id = addSnapshot(writer, 6, m_example);
        QVERIFY(waitForOpens(w, opened, 2));
        QCOMPARE(SessionState::of(w.currentDocument())->snapshotId(), id);
        QVERIFY(w.currentDocument()->entryCount() > 0);
        QCOMPARE(w.documentCount(), 1);
        // a snapshot written while another is being loaded is shown after it
        addIterations(writer, 7, 7);
        addSnapshot(writer, 7, m_real);
        QVERIFY(QTest::qWaitFor([&] { return w.isLoading(); }, 10000));
        addIterations(writer, 8, 8);
        const int64_t last = addSnapshot(writer, 8, m_example);
        QVERIFY(QTest::qWaitFor([&] { return SessionState::of(w.currentDocument())->snapshotId() == last && !w.isLoading(); }, 20000));
        QCOMPARE(panel->strip()->current(), int64_t(8));
        writer.finish(model::sessionNowUs());
        QVERIFY(QTest::qWaitFor([&] { return !panel->noteText().contains(QStringLiteral("live")); }, 10000));
    }

#ifdef MEMLENS_CLI
    // A REAL RECORDER (memlens-cli record) around a FAKE AGENT (tests/capture/fake_agent.py, in
    // place of a CUDA job's agent) that sends iterations and samples, then REPLAYS A REAL
    // SNAPSHOT when the window's button asks the recorder (SIGUSR1) for one.
    void followsARecorderAndAsksForASnapshot() {
        const QString path = m_dir.filePath(QStringLiteral("recorder-replay.memlens"));
        SpawnedProcess rec;
        rec.start(QStringLiteral(MEMLENS_CLI),
                  {QStringLiteral("record"), QStringLiteral("-o"), path, QStringLiteral("--quiet"), QStringLiteral("--"),
                   QStringLiteral(MEMLENS_PYTHON), QStringLiteral("-S"), QStringLiteral(MEMLENS_SOURCE_DIR "/tests/capture/fake_agent.py"),
                   QStringLiteral("request"), QStringLiteral("--pickle"), m_real, QStringLiteral("--iterations"), QStringLiteral("8")});
        QVERIFY(rec.processId() > 0);
        QVERIFY2(waitForReadable(path), "the recorder's session appears");
        MainWindow w(false);
        w.setPollInterval(100);
        w.show();
        QSignalSpy opened(&w, &MainWindow::documentOpened);
        w.openFiles({path});
        QVERIFY(waitForOpens(w, opened, 1));
        QVERIFY2(w.bannerMessage().isEmpty(), qPrintable(w.bannerMessage()));
        SessionState* session = SessionState::of(w.currentDocument());
        QVERIFY(session && session->file().live());
        QCOMPARE(session->file().writerPid(), int64_t(rec.processId()));
        // File > Attach finds it through the recorder's open file
        bool listed = false;
        for (const auto& r : memlens::gui::findRecordingSessions())
            listed = listed || (QFileInfo(r.path).canonicalFilePath() == QFileInfo(path).canonicalFilePath() && r.pid == rec.processId());
        QVERIFY(listed);
        auto* panel = w.sessionPanel();
        QVERIFY(QTest::qWaitFor([&] { return panel->strip()->count() == 8; }, 20000));
        QCOMPARE(panel->strip()->current(), int64_t(8));
        QCOMPARE(panel->sampleCount(), 8);
        QCOMPARE(session->snapshotId(), int64_t(0));
        auto* button = panel->findChild<QPushButton*>(QStringLiteral("snapshotNow"));
        QVERIFY(button && button->isEnabled());
        QTest::mouseClick(button, Qt::LeftButton);
        QVERIFY2(waitForOpens(w, opened, 2), "the requested snapshot is loaded");
        session = SessionState::of(w.currentDocument());
        QVERIFY(session->shownSnapshot());
        QCOMPARE(QString::fromStdString(session->shownSnapshot()->trigger), QStringLiteral("request"));
        QCOMPARE(session->file().readSnapshot(session->snapshotId()), readAll(m_real));
        QVERIFY(w.currentDocument()->entryCount() > 0);
        QCOMPARE(w.documentCount(), 1);
        QVERIFY(finished(rec, 30000));
        QVERIFY(rec.normalExit());
        QCOMPARE(rec.exitCode(), 0);
        QVERIFY(QTest::qWaitFor([&] { return !panel->noteText().contains(QStringLiteral("live")); }, 10000));
        QVERIFY(!button->isEnabled());
    }

    // A REAL CPU JOB (Debian's torch, tests/app/jobs/kept_outputs.py) under the real recorder and
    // agent, scanning for retained graphs only on request and at exit: the strip grows while it
    // runs, the button asks for a scan, the retained-graph docks come up with the job's kept
    // outputs, and stepping through iterations shows the scan of each.
    void followsACpuJobAndScansOnRequest() {
        const QString path = m_dir.filePath(QStringLiteral("cpu-job.memlens"));
        SpawnedProcess rec;
        rec.start(QStringLiteral(MEMLENS_CLI),
                  {QStringLiteral("record"), QStringLiteral("-o"), path, QStringLiteral("--quiet"), QStringLiteral("--agent-config"),
                   QStringLiteral(R"({"graph_scan_first": 0, "graph_scan_every": 0})"), QStringLiteral("--"),
                   QStringLiteral(MEMLENS_PYTHON), QStringLiteral(MEMLENS_SOURCE_DIR "/tests/app/jobs/kept_outputs.py"),
                   QStringLiteral("100"), QStringLiteral("0.05")});
        QVERIFY(rec.processId() > 0);
        QVERIFY2(waitForReadable(path), "the recorder's session appears");
        MainWindow w(false);
        w.setPollInterval(100);
        w.resize(1400, 900);
        w.show();
        QSignalSpy opened(&w, &MainWindow::documentOpened);
        w.openFiles({path});
        QVERIFY(waitForOpens(w, opened, 1));
        auto* panel = w.sessionPanel();
        QVERIFY(QTest::qWaitFor([&] { return panel->strip()->count() >= 4; }, 60000));
        const int before = panel->strip()->count();
        QVERIFY(QTest::qWaitFor([&] { return panel->strip()->count() > before; }, 20000));  // and grows
        QCOMPARE(panel->strip()->countOfPhase(QStringLiteral("train")), panel->strip()->count());
        QCOMPARE(panel->strip()->current(), SessionState::of(w.currentDocument())->file().iterations().back().index);
        QVERIFY2(panel->noteText().contains(QStringLiteral("without CUDA")), qPrintable(panel->noteText()));
        QCOMPARE(panel->sampleCount(), 0);  // no NVML, no CUDA: no plot, a line saying so
        QVERIFY(!panel->findChild<QWidget*>(QStringLiteral("processPlot"))->isVisible());
        QVERIFY2(panel->figuresText().startsWith(QStringLiteral("No process samples")), qPrintable(panel->figuresText()));
        QVERIFY(!panel->traceSpanSeconds());  // no allocator snapshot, no trace
        QVERIFY(!w.dock(QStringLiteral("graphs"))->isVisible());  // no scan yet
        auto* button = panel->findChild<QPushButton*>(QStringLiteral("snapshotNow"));
        QVERIFY(button && button->isEnabled());
        QTest::mouseClick(button, Qt::LeftButton);
        QVERIFY2(QTest::qWaitFor([&] { return w.dock(QStringLiteral("graphs"))->isVisible(); }, 20000),
                 "a graph scan arrives and the retained-graph docks come up");
        auto* scans = memlens::gui::graphScansFor(w.currentDocument());
        QVERIFY(scans && scans->scanCount() == 1);
        auto keptRoots = [](const memlens::model::GraphScanData* scan) {
            int n = 0;
            for (const auto& g : scan->graphs) n += QString::fromStdString(g.root).startsWith(QStringLiteral("__main__.kept_outputs["));
            return n;
        };
        QVERIFY(scans->currentScanData());
        const int keptAtRequest = keptRoots(scans->currentScanData());
        QVERIFY2(keptAtRequest >= 1, "the kept validation outputs are roots");
        // the job ends: its exit scan arrives, the session stops being live
        QVERIFY(finished(rec, 60000));
        QVERIFY(rec.normalExit());
        QCOMPARE(rec.exitCode(), 0);
        QVERIFY(QTest::qWaitFor([&] { return !panel->noteText().contains(QStringLiteral("live")); }, 10000));
        scans = memlens::gui::graphScansFor(w.currentDocument());
        QCOMPARE(scans->scanCount(), 2);
        QCOMPARE(scans->currentScan(), 1);  // following the end
        QCOMPARE(keptRoots(scans->currentScanData()), 100 / 3);  // one graph every 3rd step
        // stepping back to the first iteration shows the first scan, with fewer roots
        const auto& its = SessionState::of(w.currentDocument())->file().iterations();
        QCOMPARE(its.size(), size_t(100));
        w.selectIteration(its.front().index);
        QCOMPARE(scans->currentScan(), 0);
        QCOMPARE(keptRoots(scans->currentScanData()), keptAtRequest);
        w.selectIteration(its.back().index);
        QCOMPARE(scans->currentScan(), 1);
    }
#endif

    // More iterations than pixels: a column per pixel, split by the phases it covers (every 100
    // iterations, 20 eval ones: 80% train, 20% eval in each column of 100), the snapshot marked;
    // clicks still map to iterations.
    void stripWithMoreIterationsThanPixels() {
        memlens::gui::IterationStrip strip;
        std::vector<model::SessionIteration> its;
        for (int i = 1; i <= 40000; ++i) {
            model::SessionIteration it;
            it.index = i;
            it.phase = i % 100 < 80 ? "train" : "eval";
            its.push_back(it);
        }
        strip.setIterations(its, {20000});
        strip.resize(402, 26);
        const QImage img = strip.grab().toImage().convertToFormat(QImage::Format_RGB32);
        const QRgb train = memlens::gui::IterationStrip::phaseColor("train").rgb();
        const QRgb eval = memlens::gui::IterationStrip::phaseColor("eval").rgb();
        for (int x : {1, 150, 399}) {
            int t = 0, e = 0;
            for (int y = 3; y < 23; ++y) {
                t += img.pixel(x, y) == train;
                e += img.pixel(x, y) == eval;
            }
            QVERIFY2(t >= 14 && t <= 17 && e >= 3 && e <= 5, qPrintable(QStringLiteral("column %1: %2 train, %3 eval").arg(x).arg(t).arg(e)));
        }
        QCOMPARE(img.pixel(200, 26 - 5), QColor(Qt::white).rgb());  // iteration 20000's snapshot
        QVERIFY(img.pixel(201, 26 - 5) != QColor(Qt::white).rgb());
        QCOMPARE(strip.iterationAt(1), int64_t(1));
        QCOMPARE(strip.iterationAt(201), int64_t(20001));
        QCOMPARE(strip.iterationAt(400), int64_t(39901));
    }

    // A session whose snapshot is not a snapshot pickle: the banner names the file, the
    // snapshot and the place in it, on one line.
    void badSnapshotInASessionShowsWhere() {
        const QString path = m_dir.filePath(QStringLiteral("bad-snapshot.memlens"));
        const QString junk = m_dir.filePath(QStringLiteral("junk.pickle"));
        std::ofstream(junk.toStdString(), std::ios::binary) << "\x80\x04\x95garbage";
        {
            model::SessionWriter w(path.toStdString(), "tst_sessions");
            w.setProcess(process(true));
            addIterations(w, 1, 3);
            addSnapshot(w, 3, junk);
            w.finish(model::sessionNowUs());
        }
        MainWindow w(false);
        w.show();
        QSignalSpy failed(&w, &MainWindow::openFailed);
        w.openFiles({path});
        QVERIFY(failed.wait(10000));
        const QString m = w.bannerMessage();
        QVERIFY2(m.startsWith(path + QStringLiteral(": snapshot 1 (iteration, iteration 3), byte ")), qPrintable(m));
        QVERIFY(!m.contains(QLatin1Char('\n')));
        QCOMPARE(w.documentCount(), 0);
    }

    void damagedSessionShowsABanner() {
        const QString path = m_dir.filePath(QStringLiteral("broken.memlens"));
        std::ofstream(path.toStdString(), std::ios::binary) << "this is not SQLite";
        MainWindow w(false);
        w.show();
        QSignalSpy failed(&w, &MainWindow::openFailed);
        w.openFiles({path});
        QVERIFY(failed.wait(10000));
        QVERIFY2(w.bannerMessage().startsWith(path + QStringLiteral(": ")), qPrintable(w.bannerMessage()));
        QVERIFY(!w.bannerMessage().contains(QLatin1Char('\n')));
        QCOMPARE(w.documentCount(), 0);
    }
};

MEMLENS_GUI_TEST_MAIN(TestSessions)
#include "tst_sessions.moc"
