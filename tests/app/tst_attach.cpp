// File > Attach to a running PyTorch process, offscreen. A REAL CPU JOB (Debian's torch,
// tests/app/jobs/idle_job.py) is found in /proc with its command line, a plain Python process
// is not, nor a job that memlens-cli record runs (MEMLENS_SOCKET); with the FAKE NVML
// (tests/capture/fake_nvml.cpp: 123 MiB for every child of the process that loads it) its GPU
// memory is shown, without NVML "n/a". The dialog lists it under "PyTorch processes" and its
// Attach button hands the pid to the window. A STAND-IN FOR `memlens-cli attach`
// (tests/app/jobs/fake_attach.py) drives the window's side: its one-line error goes to the
// banner; its "memlens: attached to" line opens the session (a live one this test writes) and
// follows it; File > Detach and closing the window send it SIGINT. With the real memlens-cli
// (once its usage lists `attach`): Attach, follow, Detach against the real job, which keeps running.
#include "AttachDialog.h"
#include "MainWindow.h"
#include "QtTestMain.h"
#include "WindowOpens.h"
#include "SessionLoader.h"
#include "SessionPanel.h"
#include "SpawnedProcess.h"
#include "TorchProcesses.h"
#include "core/HandOver.h"
#include "memlens/capture/ProcessProbe.h"

#include "document/SnapshotDocument.h"
#include "memlens/capture/Nvml.h"
#include "memlens/model/SessionFile.h"
#include "memlens/model/SessionWriter.h"

#include <QAction>
#include <QApplication>
#include <QFile>
#include <QGroupBox>
#include <QPushButton>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTimer>
#include <QTreeWidget>
#include <QtTest>

#include <unistd.h>
#include <memory>

using memlens::gui::AttachDialog;
using memlens::gui::MainWindow;
using memlens::gui::SessionState;
using memlens::gui::TorchProcess;
namespace model = memlens::model;

// The window starts memlens-cli with QProcess, which forks: clang 14's ThreadSanitizer aborts in
// its fork handler then (tests/support/SpawnedProcess.h), so under TSan the window's attaching is
// not run.
#ifdef MEMLENS_TSAN  // (core/HandOver.h)
#define SKIP_UNDER_TSAN() QSKIP("the window's QProcess forks, which ThreadSanitizer (clang 14) aborts on")
#else
#define SKIP_UNDER_TSAN() (void)0
#endif

namespace {

const QString kJob = QStringLiteral(MEMLENS_SOURCE_DIR "/tests/app/jobs/idle_job.py");
const QString kFakeAttach = QStringLiteral(MEMLENS_SOURCE_DIR "/tests/app/jobs/fake_attach.py");

QByteArray readFile(const QString& path) {
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

std::optional<TorchProcess> listed(qint64 pid, const QSet<qint64>& exclude = {}) {
    for (const TorchProcess& p : memlens::gui::findTorchProcesses(exclude))
        if (p.pid == pid) return p;
    return std::nullopt;
}

// Sets an environment variable for the scope (the window's child processes inherit it).
class ScopedEnv {
public:
    ScopedEnv(const char* name, const QByteArray& value) : m_name(name) { qputenv(name, value); }
    ~ScopedEnv() { qunsetenv(m_name); }

private:
    const char* m_name;
};

}  // namespace

class TestAttach : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;
    bool m_torch = false;
    int m_jobs = 0;
    std::unique_ptr<SpawnedProcess> m_job;     // imports torch
    std::unique_ptr<SpawnedProcess> m_plain;   // does not
    std::unique_ptr<SpawnedProcess> m_record;  // imports torch, with MEMLENS_SOCKET set

    // Starts idle_job.py MODE (ENV set for it) and waits for its "ready" on stdout.
    std::unique_ptr<SpawnedProcess> startJob(const QString& mode, const char* envName = nullptr,
                                             const QByteArray& envValue = {}) {
        auto p = std::make_unique<SpawnedProcess>();
        const QString out = m_dir.filePath(QStringLiteral("job-%1.out").arg(++m_jobs));
        p->setStandardOutputFile(out);
        std::unique_ptr<ScopedEnv> env;
        if (envName) env = std::make_unique<ScopedEnv>(envName, envValue);
        if (!p->start(QStringLiteral(MEMLENS_PYTHON), {kJob, mode})) return nullptr;
        env.reset();
        const bool ready = QTest::qWaitFor([&] { return readFile(out).contains("ready") || p->waitForFinished(0); }, 60000);
        if (!ready || !readFile(out).contains("ready")) return nullptr;
        return p;
    }

    // A live session written by this process, as the stand-in's FILE.
    std::unique_ptr<model::SessionWriter> liveSession(const QString& path) {
        auto w = std::make_unique<model::SessionWriter>(path.toStdString(), "tst_attach (live)");
        model::SessionProcess p;
        p.pid = m_job ? m_job->processId() : ::getpid();
        p.command = {"python3", "idle_job.py", "torch"};
        p.torch = "1.13.0";
        p.snapshotsNote = "torch was built without CUDA";
        p.startedUs = model::sessionNowUs();
        w->setProcess(p);
        for (int i = 1; i <= 3; ++i) {
            model::SessionIteration it;
            it.index = i;
            it.phase = "train";
            it.startUs = p.startedUs + (i - 1) * 100'000;
            it.endUs = it.startUs + 100'000;
            w->addIteration(it);
        }
        return w;
    }

    static bool waitForOpen(MainWindow& w, QSignalSpy& opened) {
        return memlens::test::waitForOpens(w, opened, 1, 30000);
    }

    // The window with the stand-in in place of memlens-cli; sessions go to the test's folder.
    void useStandIn(MainWindow& w) {
        w.setAttachCommand(QStringLiteral(MEMLENS_PYTHON), {kFakeAttach});
        w.setAttachDirectory(m_dir.path());
        w.setPollInterval(50);
    }

private slots:
    void initTestCase() {
        QStandardPaths::setTestModeEnabled(true);
        QVERIFY(m_dir.isValid());
        SpawnedProcess check;
        check.start(QStringLiteral(MEMLENS_PYTHON), {QStringLiteral("-c"), QStringLiteral("import torch")});
        m_torch = check.waitForFinished(60000) && check.normalExit() && check.exitCode() == 0;
        if (!m_torch) return;
        m_job = startJob(QStringLiteral("torch"));
        m_plain = startJob(QStringLiteral("plain"));
        m_record = startJob(QStringLiteral("torch"), "MEMLENS_SOCKET", m_dir.filePath(QStringLiteral("no.sock")).toLocal8Bit());
        QVERIFY2(m_job && m_plain && m_record, "the idle jobs print ready");
    }

    void cleanupTestCase() {
        for (auto* p : {m_job.get(), m_plain.get(), m_record.get()})
            if (p) p->kill();
    }

    void torchLibrariesByFileName() {
        using memlens::capture::isTorchLibrary;
        QVERIFY(isTorchLibrary("/usr/lib/x86_64-linux-gnu/libtorch_cpu.so.1.13.0"));
        QVERIFY(isTorchLibrary("/venv/lib/python3.11/site-packages/torch/lib/libtorch_python.so"));
        QVERIFY(isTorchLibrary("/usr/lib/python3/dist-packages/torch/_C.cpython-311-x86_64-linux-gnu.so"));
        QVERIFY(!isTorchLibrary("/usr/lib/python3/dist-packages/torchvision/_C.so"));
        QVERIFY(!isTorchLibrary("/home/me/libtorch/notes.txt"));
        QVERIFY(!isTorchLibrary("/usr/lib/python3.11/lib-dynload/_ctypes.cpython-311-x86_64-linux-gnu.so"));
    }

    // The torch job is listed with its command line; the plain Python process, the recorded job
    // and this process are not; an excluded pid (one the window is attached to) is not either.
    void findsTheTorchJob() {
        if (!m_torch) QSKIP("Debian's python3 cannot import torch here");
        const auto job = listed(m_job->processId());
        QVERIFY2(job, "the torch job is listed");
        QCOMPARE(job->command, QStringLiteral(MEMLENS_PYTHON " ") + kJob + QStringLiteral(" torch"));
        QVERIFY(job->python);
        QVERIFY2(!listed(m_plain->processId()), "a python3 that did not import torch is not listed");
        QVERIFY2(!listed(m_record->processId()), "a job memlens-cli record runs (MEMLENS_SOCKET) is a session, not listed");
        QVERIFY(!listed(::getpid()));
        QVERIFY(!listed(m_job->processId(), {m_job->processId()}));
    }

    // NVML: the fake's 123 MiB for the job (a child of this process); without NVML, nothing.
    void gpuMemoryWhereNvmlAnswers() {
        if (!m_torch) QSKIP("Debian's python3 cannot import torch here");
        if (!memlens::capture::Nvml::load()) {
            const auto job = listed(m_job->processId());
            QVERIFY(job);
            QVERIFY2(!job->gpuMemory, "no NVML: no figure");
        }
#ifdef MEMLENS_FAKE_NVML
        ScopedEnv fake("MEMLENS_NVML_LIBRARY", MEMLENS_FAKE_NVML);
        const auto job = listed(m_job->processId());
        QVERIFY(job);
        QVERIFY(job->gpuMemory);
        QCOMPARE(*job->gpuMemory, qint64(123) << 20);
        AttachDialog dialog;
        auto* list = dialog.findChild<QTreeWidget*>(QStringLiteral("torchProcessList"));
        const auto items = list->findItems(QString::number(m_job->processId()), Qt::MatchExactly, 0);
        QCOMPARE(items.size(), 1);
        QCOMPARE(items.front()->text(1), QStringLiteral("123 MiB"));
#endif
    }

    // The dialog: the job under "PyTorch processes"; Attach hands its pid back.
    void dialogListsAndAttaches() {
        if (!m_torch) QSKIP("Debian's python3 cannot import torch here");
        AttachDialog dialog;
        auto* list = dialog.findChild<QTreeWidget*>(QStringLiteral("torchProcessList"));
        QVERIFY(list);
        auto* group = qobject_cast<QGroupBox*>(list->parentWidget());
        QVERIFY(group);
        QCOMPARE(group->title(), QStringLiteral("PyTorch processes"));
        QVERIFY(dialog.processCount() >= 1);
        const auto items = list->findItems(QString::number(m_job->processId()), Qt::MatchExactly, 0);
        QCOMPARE(items.size(), 1);
        QVERIFY2(items.front()->text(2).endsWith(kJob + QStringLiteral(" torch")), qPrintable(items.front()->text(2)));
        if (!memlens::capture::Nvml::load()) QCOMPARE(items.front()->text(1), QStringLiteral("n/a"));
        QVERIFY(list->findItems(QString::number(m_plain->processId()), Qt::MatchExactly, 0).isEmpty());
        list->setCurrentItem(items.front());
        auto* attach = dialog.findChild<QPushButton*>(QStringLiteral("attachProcessButton"));
        QVERIFY(attach && attach->isEnabled());
        QTest::mouseClick(attach, Qt::LeftButton);
        QCOMPARE(dialog.result(), int(QDialog::Accepted));
        QCOMPARE(dialog.selectedPid(), m_job->processId());
        QVERIFY(dialog.selectedPath().isEmpty());
        // a pid the window is attached to is not offered again
        AttachDialog again({m_job->processId()});
        QVERIFY(again.findChild<QTreeWidget*>(QStringLiteral("torchProcessList"))
                    ->findItems(QString::number(m_job->processId()), Qt::MatchExactly, 0)
                    .isEmpty());
    }

    // File > Attach… > the job > Attach: the CLI (the stand-in) fails, its last stderr line is the
    // banner, and the window goes on.
    void attachErrorIsTheBanner() {
        SKIP_UNDER_TSAN();
        if (!m_torch) QSKIP("Debian's python3 cannot import torch here");
        ScopedEnv fail("MEMLENS_FAKE_ATTACH", "fail");
        MainWindow w(false);
        useStandIn(w);
        w.show();
        auto* attachAction = w.findChild<QAction*>(QStringLiteral("attachAction"));
        auto* detachAction = w.findChild<QAction*>(QStringLiteral("detachAction"));
        QVERIFY(attachAction && detachAction);
        QVERIFY(!detachAction->isEnabled());
        const qint64 pid = m_job->processId();
        bool clicked = false;
        QTimer driver;  // drives the modal dialog once it is up
        connect(&driver, &QTimer::timeout, this, [&] {
            auto* dialog = qobject_cast<AttachDialog*>(QApplication::activeModalWidget());
            if (!dialog || clicked) return;
            auto* list = dialog->findChild<QTreeWidget*>(QStringLiteral("torchProcessList"));
            const auto items = list->findItems(QString::number(pid), Qt::MatchExactly, 0);
            if (items.isEmpty()) return dialog->reject();
            list->setCurrentItem(items.front());
            clicked = true;
            QTest::mouseClick(dialog->findChild<QPushButton*>(QStringLiteral("attachProcessButton")), Qt::LeftButton);
        });
        driver.start(10);
        attachAction->trigger();
        driver.stop();
        QVERIFY2(clicked, "the dialog listed the job");
        QCOMPARE(w.attachedPid(), pid);
        QVERIFY(detachAction->isEnabled());
        QTRY_VERIFY_WITH_TIMEOUT(w.attachedPid() == 0, 30000);
        QCOMPARE(w.bannerMessage(), QStringLiteral("memlens-cli: process %1 has not imported torch").arg(pid));
        QVERIFY(!detachAction->isEnabled());
        QCOMPARE(w.documentCount(), 0);
        // no memlens-cli at all: one line too
        w.setAttachCommand(m_dir.filePath(QStringLiteral("no-such-cli")));
        w.attachTo(pid);
        QTRY_VERIFY_WITH_TIMEOUT(w.attachedPid() == 0, 30000);
        QVERIFY2(w.bannerMessage().startsWith(QStringLiteral("could not start ")), qPrintable(w.bannerMessage()));
        QVERIFY(!w.bannerMessage().contains(QLatin1Char('\n')));
    }

    // The stand-in attaches: its session (live, written here) opens and is followed; Detach
    // sends SIGINT and the CLI ends; the session ends as any live one does.
    void attachFollowsAndDetaches() {
        SKIP_UNDER_TSAN();
        const QString path = m_dir.filePath(QStringLiteral("stand-in.memlens"));
        const QString log = m_dir.filePath(QStringLiteral("stand-in.log"));
        auto writer = liveSession(path);
        ScopedEnv logEnv("MEMLENS_FAKE_ATTACH_LOG", log.toLocal8Bit());
        const qint64 pid = m_job ? m_job->processId() : ::getpid();
        MainWindow w(false);
        useStandIn(w);
        w.show();
        QSignalSpy opened(&w, &MainWindow::documentOpened);
        w.attachTo(pid, path);
        QVERIFY(w.detachAction()->isEnabled());
        QVERIFY2(waitForOpen(w, opened), qPrintable(w.bannerMessage()));
        QCOMPARE(w.documentCount(), 1);
        QCOMPARE(w.currentDocument()->path(), path);
        SessionState* session = SessionState::of(w.currentDocument());
        QVERIFY(session && session->file().live());
        auto* panel = w.sessionPanel();
        QVERIFY2(panel->noteText().contains(QStringLiteral("live")), qPrintable(panel->noteText()));
        QVERIFY(w.attachProcessId() > 0);
        // followed: an iteration written now shows up
        model::SessionIteration it;
        it.index = 4;
        it.phase = "train";
        it.startUs = model::sessionNowUs();
        it.endUs = it.startUs + 1000;
        writer->addIteration(it);
        QTRY_VERIFY_WITH_TIMEOUT(panel->strip() && SessionState::of(w.currentDocument())->file().iterations().size() == 4, 10000);
        // Detach: SIGINT, the stand-in exits 0, no banner
        w.detachAction()->trigger();
        QVERIFY(!w.detachAction()->isEnabled());
        QTRY_VERIFY_WITH_TIMEOUT(w.attachedPid() == 0, 30000);
        QCOMPARE(readFile(log), QByteArray("detached ") + QByteArray::number(pid) + '\n');
        QVERIFY2(w.bannerMessage().isEmpty(), qPrintable(w.bannerMessage()));
        // the CLI finishes the session (here: the test's writer); the window stops following
        writer->finish(model::sessionNowUs());
        QTRY_VERIFY_WITH_TIMEOUT(!panel->noteText().contains(QStringLiteral("live")), 10000);
    }

    // Closing the window while attached detaches, and waits for the CLI to end.
    void closingDetaches() {
        SKIP_UNDER_TSAN();
        const QString path = m_dir.filePath(QStringLiteral("stand-in-close.memlens"));
        const QString log = m_dir.filePath(QStringLiteral("stand-in-close.log"));
        auto writer = liveSession(path);
        ScopedEnv logEnv("MEMLENS_FAKE_ATTACH_LOG", log.toLocal8Bit());
        MainWindow w(false);
        useStandIn(w);
        w.show();
        QSignalSpy opened(&w, &MainWindow::documentOpened);
        w.attachTo(4242, path);
        QVERIFY2(waitForOpen(w, opened), qPrintable(w.bannerMessage()));
        const qint64 cli = w.attachProcessId();
        QVERIFY(cli > 0);
        w.close();
        QCOMPARE(readFile(log), QByteArray("detached 4242\n"));  // it ended before close() returned
        QCOMPARE(w.attachedPid(), qint64(0));
        QVERIFY(!w.detachAction()->isEnabled());
    }

#ifdef MEMLENS_CLI
    // THE REAL memlens-cli attach against the real torch job: Attach, follow, Detach; the job
    // keeps running. Skipped while the CLI's usage does not list `attach`.
    void attachesWithTheRealCli() {
        SKIP_UNDER_TSAN();
        if (!m_torch) QSKIP("Debian's python3 cannot import torch here");
        SpawnedProcess help;
        const QString usage = m_dir.filePath(QStringLiteral("usage.txt"));
        help.setStandardOutputFile(usage);
        help.setStandardErrorFile(m_dir.filePath(QStringLiteral("usage.err")));
        QVERIFY(help.start(QStringLiteral(MEMLENS_CLI), {QStringLiteral("--help")}));
        QVERIFY(help.waitForFinished(30000));
        const QByteArray text = readFile(usage) + readFile(m_dir.filePath(QStringLiteral("usage.err")));
        if (!text.contains("\n  attach ")) QSKIP("memlens-cli's usage does not list attach yet");

        const qint64 pid = m_job->processId();
        MainWindow w(false);
        w.setAttachCommand(QStringLiteral(MEMLENS_CLI));
        w.setAttachDirectory(m_dir.path());
        w.setPollInterval(100);
        w.show();
        QSignalSpy opened(&w, &MainWindow::documentOpened);
        w.attachTo(pid);
        QVERIFY(w.detachAction()->isEnabled());
        QVERIFY2(QTest::qWaitFor([&] { return (opened.count() >= 1 && !w.isLoading()) || w.attachedPid() == 0; }, 120000),
                 "the CLI attaches or fails");
        QVERIFY2(w.attachedPid() == pid && opened.count() >= 1, qPrintable(w.bannerMessage()));
        QVERIFY2(w.bannerMessage().isEmpty(), qPrintable(w.bannerMessage()));
        const QString path = w.currentDocument()->path();
        QVERIFY2(QFileInfo(path).fileName().startsWith(QStringLiteral("memlens-attach-%1-").arg(pid)), qPrintable(path));
        QCOMPARE(QFileInfo(path).absolutePath(), QFileInfo(m_dir.path()).absoluteFilePath());
        SessionState* session = SessionState::of(w.currentDocument());
        QVERIFY(session && session->file().live());
        auto* panel = w.sessionPanel();
        QVERIFY2(panel->noteText().contains(QStringLiteral("live")), qPrintable(panel->noteText()));
        // the attached job is a session now, not a process to attach to
        bool recorded = false;
        for (const auto& r : memlens::gui::findRecordingSessions())
            recorded = recorded || QFileInfo(r.path).canonicalFilePath() == QFileInfo(path).canonicalFilePath();
        QVERIFY(recorded);
        QVERIFY(!listed(pid, {pid}));
        // Detach: the CLI exits 0, the session ends, the job keeps running
        w.detachAction()->trigger();
        QTRY_VERIFY_WITH_TIMEOUT(w.attachedPid() == 0, 60000);
        QVERIFY2(w.bannerMessage().isEmpty(), qPrintable(w.bannerMessage()));
        QTRY_VERIFY_WITH_TIMEOUT(!panel->noteText().contains(QStringLiteral("live")), 30000);
        QVERIFY2(!m_job->waitForFinished(0), "the job keeps running after Detach");
        QVERIFY2(listed(pid), "and can be attached to again");
    }
#endif
};

MEMLENS_GUI_TEST_MAIN(TestAttach)
#include "tst_attach.moc"
