// memlens-bench-window-memory FILE
//
// The window's memory (issue 13: 2-4 GB files open in the window with peak memory at most half
// the file). One MainWindow (offscreen, 1600x1000) opens FILE. Once the document is there, its
// state histories are built and every job is idle (the doctor, allocation sites, the iteration
// diff: what opening a file starts), it prints the process's peak resident memory (VmHWM) and
// what stays resident (VmRSS), in MB and against the file's size, and the same for the empty
// window before, which is Qt's and the window's own. Ends with one machine-readable line:
//   RESULT file_bytes=... empty_hwm_kb=... peak_hwm_kb=... resident_kb=... opened_s=... idle_s=...
#include "../ProcStatus.h"
#include "MainWindow.h"
#include "ProcessMemory.h"
#include "document/JobTracker.h"
#include "document/SnapshotDocument.h"

#include <QApplication>
#include <QEventLoop>
#include <QFileInfo>
#include <QTimer>

#include <chrono>
#include <cstdio>

using namespace memlens;
using Clock = std::chrono::steady_clock;

int main(int argc, char** argv) {
    gui::giveLargeBlocksBack();  // as the window's main() does
    if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
    QApplication app(argc, argv);
    if (argc != 2) {
        std::fprintf(stderr, "usage: %s FILE\n", argv[0]);
        return 2;
    }
    const QString path = QString::fromLocal8Bit(argv[1]);
    const double fileMb = static_cast<double>(QFileInfo(path).size()) / 1e6;

    gui::MainWindow w(false);
    w.resize(1600, 1000);
    w.show();
    QCoreApplication::processEvents();
    const long emptyKb = bench::procStatusKb("VmHWM");

    QEventLoop loop;
    views::SnapshotDocument* doc = nullptr;
    bool failed = false;
    QObject::connect(&w, &gui::MainWindow::documentOpened, &loop, [&](views::SnapshotDocument* d) {
        doc = d;
        loop.quit();
    });
    QObject::connect(&w, &gui::MainWindow::openFailed, &loop, [&](const QString&, const QString& message) {
        std::fprintf(stderr, "%s\n", message.toUtf8().constData());
        failed = true;
        loop.quit();
    });
    const auto t0 = Clock::now();
    w.openFiles({path});
    loop.exec();
    if (failed || !doc) return 1;
    const double openedS = std::chrono::duration<double>(Clock::now() - t0).count();
    const long openedHwmKb = bench::procStatusKb("VmHWM"), openedRssKb = bench::procStatusKb("VmRSS");
    // the rest of what opening starts: the histories, then the analyses
    if (doc->isRewinding()) {
        QObject::connect(doc, &views::SnapshotDocument::historiesReady, &loop, &QEventLoop::quit);
        loop.exec();
    }
    const long historiesHwmKb = bench::procStatusKb("VmHWM"), historiesRssKb = bench::procStatusKb("VmRSS");
    if (!views::JobTracker::waitForAllIdle(600'000)) {
        std::fprintf(stderr, "the window's jobs did not end within 10 minutes\n");
        return 1;
    }
    const double idleS = std::chrono::duration<double>(Clock::now() - t0).count();
    const long peakKb = bench::procStatusKb("VmHWM"), residentKb = bench::procStatusKb("VmRSS");
    // what the document holds, by the parts' own accounting
    double timelinesMb = 0, lifetimesMb = 0, historiesMb = 0;
    for (const auto& [device, t] : doc->loaded().timelines)
        timelinesMb += static_cast<double>(t->liveBytes.memoryBytes() + t->reservedBytes.memoryBytes()) / 1e6;
    for (const auto& [device, l] : doc->loaded().lifetimes) lifetimesMb += static_cast<double>(l->memoryBytes()) / 1e6;
    // the window pairs them later (StateHistories::Later): the document holds the shown device's
    if (doc->loaded().lifetimes.empty()) lifetimesMb += static_cast<double>(doc->lifetimes().memoryBytes()) / 1e6;
    for (const auto& [device, h] : doc->histories()) historiesMb += static_cast<double>(h->memoryBytes()) / 1e6;
    const auto mb = [](long kb) { return static_cast<double>(kb) * 1024 / 1e6; };
    std::printf("%s: %.1f MB\n", QFileInfo(path).fileName().toUtf8().constData(), fileMb);
    std::printf("  the empty window             peak %8.1f MB\n", mb(emptyKb));
    std::printf("  the file open, every job idle: peak %8.1f MB = %.2f x file (goal <= 0.5: %s), resident %.1f MB\n",
                mb(peakKb), mb(peakKb) / fileMb, mb(peakKb) / fileMb <= 0.5 ? "ok" : "MISSED", mb(residentKb));
    std::printf("  without the empty window's own: peak %.1f MB = %.2f x file\n", mb(peakKb - emptyKb),
                mb(peakKb - emptyKb) / fileMb);
    std::printf("  when the document arrived:    peak %8.1f MB, resident %.1f MB\n", mb(openedHwmKb), mb(openedRssKb));
    std::printf("  when its histories were ready: peak %8.1f MB, resident %.1f MB\n", mb(historiesHwmKb),
                mb(historiesRssKb));
    std::printf("  its parts: snapshot %.1f MB, timelines %.1f MB, allocation lifetimes %.1f MB, state histories %.1f MB\n",
                static_cast<double>(doc->snapshot().memoryBytes()) / 1e6, timelinesMb, lifetimesMb, historiesMb);
    std::printf("  document after %.2f s, every job idle after %.2f s\n", openedS, idleS);
    std::printf("RESULT file_bytes=%lld empty_hwm_kb=%ld peak_hwm_kb=%ld resident_kb=%ld opened_s=%.3f idle_s=%.3f\n",
                static_cast<long long>(QFileInfo(path).size()), emptyKb, peakKb, residentKb, openedS, idleS);
    return 0;
}
