// SessionLoader: reads a .memlens session off the GUI thread like views::SnapshotLoader: each load
// ends in exactly one of loaded(), failed() or cancelled() (cancel used to emit nothing), a new
// load supersedes the running one, and a loader destroyed while loading emits nothing more.
#include "QtTestMain.h"
#include "TraceFixture.h"

#include "SessionLoader.h"

#include "memlens/model/SessionWriter.h"

#include <QApplication>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

using memlens::gui::SessionLoader;
using memlens::gui::SessionLoadResult;
namespace model = memlens::model;

class TestSessionLoader : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;
    QString m_path;

private slots:
    void initTestCase() {
        m_path = m_dir.filePath(QStringLiteral("run.memlens"));
        model::SessionWriter w(m_path.toStdString(), "tst_sessionloader");
        w.addIteration({1, "train", 10, 20});
        w.addSnapshot({0, 1, model::trigger::kRequest, 15, 0, 0, "{}"}, tracetest::picklize(tracetest::smallTrace()));
        w.finish(model::sessionNowUs());
    }

    void loads() {
        SessionLoader loader;
        QSignalSpy loaded(&loader, &SessionLoader::loaded);
        QSignalSpy failed(&loader, &SessionLoader::failed);
        QSignalSpy cancelled(&loader, &SessionLoader::cancelled);
        const quint64 g = loader.load(m_path);
        QVERIFY(loader.isLoading());
        QVERIFY(loader.waitForIdle());
        QVERIFY(!loader.isLoading());
        QCOMPARE(loaded.count(), 1);
        QCOMPARE(failed.count() + cancelled.count(), 0);
        QCOMPARE(loaded.at(0).at(0).value<quint64>(), g);
        const auto result = loaded.at(0).at(1).value<std::shared_ptr<SessionLoadResult>>();
        QVERIFY(result && result->file && result->loaded && result->scans);
        QVERIFY(result->snapshotId > 0);
        QCOMPARE(result->iteration, int64_t(1));
    }

    void failsWithOneLine() {
        SessionLoader loader;
        QSignalSpy failed(&loader, &SessionLoader::failed);
        const QString missing = m_dir.filePath(QStringLiteral("missing.memlens"));
        loader.load(missing);
        QVERIFY(loader.waitForIdle());
        QCOMPARE(failed.count(), 1);
        QCOMPARE(failed.at(0).at(1).toString(), missing);
        const QString message = failed.at(0).at(2).toString();
        QVERIFY2(message.startsWith(missing + QStringLiteral(": ")), qPrintable(message));
        QVERIFY(!message.contains(QLatin1Char('\n')));
    }

    // cancel() reports cancelled(), once, as the snapshot loader does; nothing else arrives
    void cancelEmitsCancelled() {
        SessionLoader loader;
        QSignalSpy loaded(&loader, &SessionLoader::loaded);
        QSignalSpy failed(&loader, &SessionLoader::failed);
        QSignalSpy cancelled(&loader, &SessionLoader::cancelled);
        const quint64 g = loader.load(m_path);
        loader.cancel();
        QVERIFY(!loader.isLoading());
        QCOMPARE(cancelled.count(), 1);
        QCOMPARE(cancelled.at(0).at(0).value<quint64>(), g);
        QCOMPARE(cancelled.at(0).at(1).toString(), m_path);
        loader.cancel();  // nothing running: no second report
        QCOMPARE(cancelled.count(), 1);
        QVERIFY(loader.waitForIdle());
        QCOMPARE(loaded.count(), 0);
        QCOMPARE(failed.count(), 0);
        QCOMPARE(cancelled.count(), 1);
    }

    void aNewLoadSupersedesTheRunningOne() {
        SessionLoader loader;
        QSignalSpy loaded(&loader, &SessionLoader::loaded);
        QSignalSpy cancelled(&loader, &SessionLoader::cancelled);
        const quint64 g1 = loader.load(m_path);
        const quint64 g2 = loader.load(m_path);
        QVERIFY(g2 > g1);
        QCOMPARE(cancelled.count(), 1);
        QCOMPARE(cancelled.at(0).at(0).value<quint64>(), g1);
        QVERIFY(loader.waitForIdle());
        QCOMPARE(loaded.count(), 1);
        QCOMPARE(loaded.at(0).at(0).value<quint64>(), g2);
    }

    void destroyedWhileLoading() {
        auto* loader = new SessionLoader;
        QSignalSpy loaded(loader, &SessionLoader::loaded);
        QSignalSpy failed(loader, &SessionLoader::failed);
        QSignalSpy cancelled(loader, &SessionLoader::cancelled);
        QSignalSpy destroyed(loader, &QObject::destroyed);
        loader->load(m_path);
        delete loader;
        QCOMPARE(destroyed.count(), 1);
        QVERIFY(memlens::views::JobTracker::waitForAllIdle());
        QCOMPARE(loaded.count() + failed.count() + cancelled.count(), 0);
    }
};

MEMLENS_GUI_TEST_MAIN(TestSessionLoader)
#include "tst_sessionloader.moc"
