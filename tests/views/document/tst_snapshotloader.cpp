// SnapshotLoader: loads off the GUI thread and reports progress, the result, or the reader's
// one-line error; a new load cancels the running one, whose results never arrive; a loader
// destroyed while loading emits nothing more. No sleeps: the tests wait for the loader's jobs.
#include "QtTestMain.h"
#include "DocumentFixture.h"

#include "document/SnapshotLoader.h"

#include <QSignalSpy>
#include <QTemporaryDir>
#include <QThread>
#include <QtTest>

#include <fstream>

using namespace memlens::views;

class TestSnapshotLoader : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;

    QString write(const QString& name, const std::string& bytes) {
        const QString path = m_dir.filePath(name);
        std::ofstream(path.toStdString(), std::ios::binary) << bytes;
        return path;
    }

private slots:
    void loads() {
        const QString path = write(QStringLiteral("small.pickle"), tracetest::picklize(tracetest::smallTrace()));
        SnapshotLoader loader;
        QSignalSpy loaded(&loader, &SnapshotLoader::loaded);
        QSignalSpy progress(&loader, &SnapshotLoader::progressChanged);
        QSignalSpy failed(&loader, &SnapshotLoader::failed);
        const quint64 g = loader.load(path);
        QVERIFY(g != 0);
        QVERIFY(loader.isLoading());
        QVERIFY(loaded.wait(10000));
        QVERIFY(!loader.isLoading());
        QCOMPARE(failed.count(), 0);
        QCOMPARE(loaded.at(0).at(0).value<quint64>(), g);
        const auto snap = loaded.at(0).at(1).value<std::shared_ptr<const LoadedSnapshot>>();
        QVERIFY(snap);
        QCOMPARE(snap->snapshot->devices.size(), size_t(1));
        // the window's load: the timeline, and the final state on a thread of its own (not waited
        // for); the document pairs the allocations and builds the histories once it shows the timeline
        QVERIFY(snap->timelines.count(0));
        QVERIFY(snap->finalStatesLater.valid());
        QVERIFY(snap->finalStatesLater.get().count(0));
        QVERIFY(snap->lifetimes.empty());
        QVERIFY(snap->histories.empty());
        QVERIFY(progress.count() >= 1);
        for (const auto& args : progress) {
            QCOMPARE(args.at(0).value<quint64>(), g);
            QVERIFY(!args.at(1).toString().isEmpty());
        }
    }

    void failsWithTheReadersMessage() {
        const QString path = write(QStringLiteral("broken.pickle"), "garbage");
        SnapshotLoader loader;
        QSignalSpy failed(&loader, &SnapshotLoader::failed);
        QSignalSpy loaded(&loader, &SnapshotLoader::loaded);
        const quint64 g = loader.load(path);
        QVERIFY(failed.wait(10000));
        QCOMPARE(loaded.count(), 0);
        QCOMPARE(failed.at(0).at(0).value<quint64>(), g);
        QCOMPARE(failed.at(0).at(1).toString(), path);
        const QString message = failed.at(0).at(2).toString();
        QVERIFY2(message.startsWith(path + QStringLiteral(": ")), qPrintable(message));
        QVERIFY(!message.contains(QLatin1Char('\n')));

        loader.load(m_dir.filePath(QStringLiteral("missing.pickle")));
        QVERIFY(failed.wait(10000));
        QVERIFY(failed.at(1).at(2).toString().contains(QStringLiteral("missing.pickle")));
    }

    void aNewLoadSupersedesTheRunningOne() {
        const QString first = write(QStringLiteral("first.pickle"), tracetest::picklize(tracetest::smallTrace()));
        const QString second = write(QStringLiteral("second.pickle"), tracetest::picklize({{"alloc", tracetest::slot(0), 4096}}));
        SnapshotLoader loader;
        QSignalSpy loaded(&loader, &SnapshotLoader::loaded);
        QSignalSpy cancelled(&loader, &SnapshotLoader::cancelled);
        const quint64 g1 = loader.load(first);
        const quint64 g2 = loader.load(second);
        QVERIFY(g2 > g1);
        QCOMPARE(cancelled.count(), 1);
        QCOMPARE(cancelled.at(0).at(0).value<quint64>(), g1);
        QVERIFY(loaded.wait(10000));
        QVERIFY(loader.waitForIdle());  // anything the first job still posts arrives now, and is dropped
        QCOMPARE(loaded.count(), 1);
        QCOMPARE(cancelled.count(), 1);
        QCOMPARE(loaded.at(0).at(0).value<quint64>(), g2);
        const auto snap = loaded.at(0).at(1).value<std::shared_ptr<const LoadedSnapshot>>();
        QCOMPARE(snap->snapshot->devices[0].trace.rows(), size_t(1));
    }

    void cancel() {
        const QString path = write(QStringLiteral("c.pickle"), tracetest::picklize(tracetest::smallTrace()));
        SnapshotLoader loader;
        QSignalSpy loaded(&loader, &SnapshotLoader::loaded);
        QSignalSpy failed(&loader, &SnapshotLoader::failed);
        QSignalSpy cancelled(&loader, &SnapshotLoader::cancelled);
        loader.load(path);
        loader.cancel();
        QVERIFY(!loader.isLoading());
        QCOMPARE(cancelled.count(), 1);
        loader.cancel();  // nothing running: no second report
        QCOMPARE(cancelled.count(), 1);
        QVERIFY(loader.waitForIdle());
        QCOMPARE(loaded.count(), 0);
        QCOMPARE(failed.count(), 0);
        QCOMPARE(cancelled.count(), 1);
    }

    void destroyedWhileLoading() {
        // the loader goes away with its window: it emits destroyed() and nothing else (not
        // cancelled(), which a window would act on while it is being torn down); the job's
        // outcome finds no loader and is freed off the GUI thread; nothing crashes
        const QString path = write(QStringLiteral("d.pickle"), tracetest::picklize(tracetest::smallTrace()));
        auto* loader = new SnapshotLoader;
        QSignalSpy loaded(loader, &SnapshotLoader::loaded);
        QSignalSpy failed(loader, &SnapshotLoader::failed);
        QSignalSpy cancelled(loader, &SnapshotLoader::cancelled);
        QSignalSpy progress(loader, &SnapshotLoader::progressChanged);
        QSignalSpy destroyed(loader, &QObject::destroyed);
        loader->load(path);
        QVERIFY(loader->isLoading());
        const int progressBefore = progress.count();
        delete loader;
        QCOMPARE(destroyed.count(), 1);
        QVERIFY(JobTracker::waitForAllIdle());
        QCOMPARE(loaded.count(), 0);
        QCOMPARE(failed.count(), 0);
        QCOMPARE(cancelled.count(), 0);
        QCOMPARE(progress.count(), progressBefore);
    }
};

MEMLENS_CORE_TEST_MAIN(TestSnapshotLoader)
#include "tst_snapshotloader.moc"
