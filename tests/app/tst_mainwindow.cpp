// The window without a screen: files open in tabs (several at once, one after the other), a new
// open supersedes a running one, the same file again replaces its tab, a broken file leaves a
// banner and the window usable, drops open files, the device selector switches devices, the
// Navigate actions step the current entry, closing tabs brings the start page back, and the
// layout survives a restart.
#include "MainWindow.h"
#include "NavigationActions.h"
#include "SelectionExport.h"

#include "Idle.h"
#include "QtTestMain.h"
#include "WindowOpens.h"
#include "Synthetic.h"
#include "document/SnapshotDocument.h"
#include "memlens/model/SnapshotReader.h"

#include <QAction>
#include <QComboBox>
#include <QDockWidget>
#include <QMimeData>
#include <QSettings>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTabBar>
#include <QTemporaryDir>
#include <QUrl>
#include <QApplication>
#include <QtTest>

#include <fstream>

using memlens::gui::MainWindow;

namespace {

constexpr uint64_t MiB = 1024 * 1024;

// Two devices; device 1 has the longer trace (so it opens first): alloc, oom, free, alloc, oom.
std::string twoDevices() {
    using namespace synth;
    constexpr uint64_t A = 0x7f0000000000, B = 0x7f1000000000;
    P seg0 = segment(0, A, {{A, 2 * MiB, 0, "inactive", nullptr}});
    P seg1 = segment(1, B, {{B, 1 * MiB, 1 * MiB, "active_allocated", nullptr}, {B + MiB, MiB, 0, "inactive", nullptr}});
    P oom = dict({{"action", str("oom")}, {"device_free", unum(0)}, {"size", unum(64 * MiB)}, {"stream", num(0)}});
    return dumps(snapshot({seg0, seg1}, {{entry("alloc", A, MiB, nullptr, 1), entry("free_completed", A, MiB, nullptr, 2)},
                                         {entry("alloc", B, MiB / 2, nullptr, 1), oom, entry("free_requested", B, MiB / 2, nullptr, 3),
                                          entry("free_completed", B, MiB / 2, nullptr, 4), entry("alloc", B, MiB, nullptr, 5), oom}}),
                 4);
}

} // namespace

class TestMainWindow : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;
    QString m_example = QStringLiteral(MEMLENS_SOURCE_DIR "/resources/example.pickle");

    QString write(const QString& name, const std::string& bytes) {
        const QString path = m_dir.filePath(name);
        std::ofstream(path.toStdString(), std::ios::binary) << bytes;
        return path;
    }

    static bool waitForOpens(MainWindow& w, QSignalSpy& opened, int count) {
        return memlens::test::waitForOpens(w, opened, count, 20000);
    }

private slots:
    void initTestCase() { QStandardPaths::setTestModeEnabled(true); }

    void opensFilesInTabs() {
        MainWindow w(false);
        w.show();
        QSignalSpy opened(&w, &MainWindow::documentOpened);
        QVERIFY(!w.dock(QStringLiteral("timeline"))->isVisible());  // the start page, until a file opens
        const QString two = write(QStringLiteral("two.pickle"), twoDevices());
        w.openFiles({m_example, two});
        QVERIFY(waitForOpens(w, opened, 2));
        QCOMPARE(w.documentCount(), 2);
        QCOMPARE(w.tabs()->count(), 2);
        QCOMPARE(w.tabs()->tabText(0), QStringLiteral("example.pickle"));
        QCOMPARE(w.currentDocument(), w.document(1));
        QVERIFY(w.dock(QStringLiteral("timeline"))->isVisible());
        QVERIFY(w.windowTitle().startsWith(QStringLiteral("two.pickle")));
        // the same file again replaces its tab
        w.openFiles({two});
        QVERIFY(waitForOpens(w, opened, 3));
        QCOMPARE(w.documentCount(), 2);
        // tabs switch the views' document
        w.tabs()->setCurrentIndex(0);
        QCOMPARE(w.currentDocument()->fileName(), QStringLiteral("example.pickle"));
        // closing every tab brings the start page back
        w.tabs()->tabCloseRequested(1);
        w.tabs()->tabCloseRequested(0);
        QCOMPARE(w.documentCount(), 0);
        QVERIFY(!w.currentDocument());
        QVERIFY(!w.dock(QStringLiteral("timeline"))->isVisible());
    }

    void aNewOpenSupersedesTheRunningOne() {
        MainWindow w(false);
        QSignalSpy opened(&w, &MainWindow::documentOpened);
        QSignalSpy failed(&w, &MainWindow::openFailed);
        w.openFiles({m_example});
        w.openFiles({write(QStringLiteral("second.pickle"), twoDevices())});
        QVERIFY(waitForOpens(w, opened, 1));
        // both loads over (the global pool idle) and what they posted delivered: only then count
        QVERIFY(memlens::test::drainGlobalThreadPool());
        QVERIFY(!w.isLoading());
        QCOMPARE(opened.count(), 1);
        QCOMPARE(w.documentCount(), 1);
        QCOMPARE(w.currentDocument()->fileName(), QStringLiteral("second.pickle"));
        QCOMPARE(failed.count(), 0);
    }

    void brokenFileShowsABanner() {
        MainWindow w(false);
        w.show();
        QSignalSpy opened(&w, &MainWindow::documentOpened);
        QSignalSpy failed(&w, &MainWindow::openFailed);
        w.openFiles({m_example});
        QVERIFY(waitForOpens(w, opened, 1));
        const QString broken = write(QStringLiteral("broken.pickle"), "not a pickle at all");
        w.openFiles({broken});
        QVERIFY(failed.wait(10000));
        QVERIFY2(w.bannerMessage().startsWith(broken + QStringLiteral(": ")), qPrintable(w.bannerMessage()));
        QCOMPARE(w.documentCount(), 1);  // what was open stays open and usable
        // entries are picked once the state histories are ready (built after the first picture;
        // on a busy machine, maybe not before the broken file's error)
        QTRY_VERIFY(!w.currentDocument()->isRewinding());
        w.navigation()->previousEvent->trigger();
        QCOMPARE(w.currentDocument()->currentEvent(), w.currentDocument()->entryCount() - 2);
        // the next successful open clears the banner
        w.openFiles({m_example});
        QVERIFY(waitForOpens(w, opened, 2));
        QVERIFY(w.bannerMessage().isEmpty());
    }

    void dropOpensFiles() {
        MainWindow w(false);
        QSignalSpy opened(&w, &MainWindow::documentOpened);
        QMimeData mime;
        mime.setUrls({QUrl::fromLocalFile(m_example)});
        QDragEnterEvent enter(QPoint(10, 10), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
        QCoreApplication::sendEvent(&w, &enter);
        QVERIFY(enter.isAccepted());
        QDropEvent drop(QPointF(10, 10), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
        QCoreApplication::sendEvent(&w, &drop);
        QVERIFY(waitForOpens(w, opened, 1));
        QCOMPARE(w.currentDocument()->fileName(), QStringLiteral("example.pickle"));
        QMimeData text;
        text.setText(QStringLiteral("hello"));
        QDragEnterEvent refused(QPoint(10, 10), Qt::CopyAction, &text, Qt::LeftButton, Qt::NoModifier);
        refused.setAccepted(false);
        QCoreApplication::sendEvent(&w, &refused);
        QVERIFY(!refused.isAccepted());
    }

    void deviceSelectorAndStepping() {
        MainWindow w(false);
        QSignalSpy opened(&w, &MainWindow::documentOpened);
        w.openFiles({write(QStringLiteral("devices.pickle"), twoDevices())});
        QVERIFY(waitForOpens(w, opened, 1));
        memlens::views::SnapshotDocument* doc = w.currentDocument();
        QCOMPARE(doc->device(), 1);
        QComboBox* devices = w.deviceSelector();
        QCOMPARE(devices->count(), 2);
        QVERIFY(devices->isEnabled());
        QCOMPARE(devices->currentData().toInt(), 1);

        auto* nav = w.navigation();
        QCOMPARE(doc->currentEvent(), int64_t(5));
        // the window builds the state histories after the first picture; entries are picked once
        // they are ready
        QTRY_VERIFY(!doc->isRewinding());
        nav->previousOom->trigger();
        QCOMPARE(doc->currentEvent(), int64_t(1));
        nav->nextOom->trigger();
        QCOMPARE(doc->currentEvent(), int64_t(5));
        nav->nextOom->trigger();  // none later: stays
        QCOMPARE(doc->currentEvent(), int64_t(5));
        doc->setCurrentEvent(0);
        nav->nextSameAllocation->trigger();  // alloc -> free_requested
        QCOMPARE(doc->currentEvent(), int64_t(2));
        nav->nextSameAllocation->trigger();
        QCOMPARE(doc->currentEvent(), int64_t(3));
        nav->nextSameAllocation->trigger();  // the alloc at 4 is another allocation
        QCOMPARE(doc->currentEvent(), int64_t(3));
        nav->previousSameAllocation->trigger();
        QCOMPARE(doc->currentEvent(), int64_t(2));
        nav->nextEvent->trigger();
        QCOMPARE(doc->currentEvent(), int64_t(3));
        QVERIFY(!nav->back->isEnabled());
        doc->setSelection(1, 3);
        QVERIFY(nav->back->isEnabled());
        nav->resetSelection->trigger();
        QVERIFY(!doc->selection());

        devices->setCurrentIndex(0);
        devices->activated(0);
        QCOMPARE(doc->device(), 0);
        QCOMPARE(doc->entryCount(), int64_t(2));
        QVERIFY(!w.raiseView(QStringLiteral("nonsense")));
        QVERIFY(w.raiseView(QStringLiteral("events")));
    }

    void layoutSurvivesARestart() {
        QSettings().clear();
        {
            MainWindow w(true);
            w.show();
            QSignalSpy opened(&w, &MainWindow::documentOpened);
            w.openFiles({m_example});
            QVERIFY(waitForOpens(w, opened, 1));
            w.dock(QStringLiteral("stack"))->hide();
            w.close();
        }
        MainWindow again(true);
        again.show();
        QSignalSpy opened(&again, &MainWindow::documentOpened);
        again.openFiles({m_example});
        QVERIFY(waitForOpens(again, opened, 1));
        QVERIFY(!again.dock(QStringLiteral("stack"))->isVisible());
        QVERIFY(again.dock(QStringLiteral("timeline"))->isVisible());
        QCOMPARE(QSettings().value(QStringLiteral("recentFiles")).toStringList().value(0), QFileInfo(m_example).absoluteFilePath());
        QSettings().clear();
    }

    // File > Export Selection: enabled with a selection; the file it writes holds the range's
    // entries and reads back, and an unwritable path ends in the banner
    void exportsTheSelection() {
        MainWindow w(false);
        w.show();
        QSignalSpy opened(&w, &MainWindow::documentOpened);
        w.openFiles({m_example});
        QVERIFY(waitForOpens(w, opened, 1));
        memlens::views::SnapshotDocument* doc = w.currentDocument();
        QVERIFY(!w.exportSelectionAction()->isEnabled());
        doc->setSelection(1000, 1999);
        QVERIFY(w.exportSelectionAction()->isEnabled());
        QSignalSpy finished(w.selectionExport(), &memlens::gui::SelectionExport::finished);
        const QString out = m_dir.filePath(QStringLiteral("range.pickle"));
        w.exportSelectionTo(out);
        QVERIFY(finished.wait(20000));
        QVERIFY2(finished.front().front().toString().contains(QStringLiteral("1000 entries")),
                 qPrintable(finished.front().front().toString()));
        const memlens::model::Snapshot s = memlens::model::readSnapshotFile(out.toStdString());
        QCOMPARE(s.device(0)->trace.rows(), size_t(1000));
        // the entries are the original's, in order
        const auto& t = doc->snapshot().device(0)->trace;
        const auto& u = s.device(0)->trace;
        for (size_t i = 0; i < 1000; ++i) {
            QCOMPARE(u.size[i], t.size[1000 + i]);
            QCOMPARE(u.action[i], t.action[1000 + i]);
        }
        QSignalSpy failed(w.selectionExport(), &memlens::gui::SelectionExport::failed);
        w.exportSelectionTo(m_dir.filePath(QStringLiteral("no/such/dir/x.pickle")));
        QVERIFY(failed.wait(20000));
        QVERIFY2(w.bannerMessage().contains(QStringLiteral("cannot write")), qPrintable(w.bannerMessage()));
    }

};

MEMLENS_GUI_TEST_MAIN(TestMainWindow)
#include "tst_mainwindow.moc"
