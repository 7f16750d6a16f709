// EventsModel under QAbstractItemModelTester: rows computed from the trace's columns, as a range
// or a list of entries, swapped inside a model reset; the row <-> entry mapping; cell values.
#include "DocumentFixture.h"
#include "QtTestMain.h"

#include "events/EventsModel.h"

#include <QAbstractItemModelTester>
#include <QSignalSpy>
#include <QApplication>
#include <QtTest>

using namespace memlens::views;
using namespace tracetest;

class TestEventsModel : public QObject {
    Q_OBJECT

    static QString cell(const EventsModel& m, int row, int column) {
        return m.data(m.index(row, column)).toString();
    }

private slots:
    void cells() {
        auto doc = document(smallTrace());
        EventsModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        model.setDocument(doc.get());
        QCOMPARE(model.rowCount(), 12);
        QCOMPARE(model.columnCount(), int(EventsModel::ColumnCount));
        QCOMPARE(cell(model, 1, EventsModel::IndexColumn), QStringLiteral("1"));
        QCOMPARE(cell(model, 1, EventsModel::TimeColumn), QStringLiteral("0.010"));  // 10 µs after the first
        QCOMPARE(cell(model, 1, EventsModel::ActionColumn), QStringLiteral("alloc"));
        QCOMPARE(cell(model, 1, EventsModel::AddressColumn), QStringLiteral("0x7f0000000000"));
        QCOMPARE(cell(model, 1, EventsModel::SizeColumn), QStringLiteral("1 MiB"));
        QCOMPARE(cell(model, 1, EventsModel::FrameColumn), QStringLiteral("weights (model.py:40)"));
        QVERIFY(model.data(model.index(1, EventsModel::FrameColumn), Qt::ToolTipRole).toString().contains(QStringLiteral("/home/me/model.py:40")));
        QCOMPARE(cell(model, 6, EventsModel::ActionColumn), QStringLiteral("oom"));
        QCOMPARE(cell(model, 6, EventsModel::AddressColumn), QStringLiteral("3 MiB free"));
        QCOMPARE(cell(model, 6, EventsModel::FrameColumn), QString());
        QCOMPARE(model.data(model.index(3, 0), EventsModel::EntryRole).toLongLong(), 3LL);
        QCOMPARE(model.headerData(EventsModel::SizeColumn, Qt::Horizontal).toString(), QStringLiteral("Size"));
        QVERIFY(!model.data(model.index(12, 0)).isValid());
    }

    // At most windowRows() rows at a time: a window over the shown entries, moved to an entry or
    // by a number of them, clamped to them, each move a model reset.
    void theRowsAreAWindowOfTheShownEntries() {
        auto doc = document(smallTrace());
        EventsModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        model.setDocument(doc.get());
        model.setWindowRows(5);
        QCOMPARE(model.shownCount(), int64_t(12));
        QCOMPARE(model.rowCount(), 5);
        QCOMPARE(model.entryAt(4), int64_t(4));
        QCOMPARE(model.entryAt(5), int64_t(-1));
        QCOMPARE(model.rowOf(7), -1);
        QSignalSpy resets(&model, &QAbstractItemModel::modelReset);
        QVERIFY(model.showEntry(7));  // in the middle of the window
        QCOMPARE(resets.count(), 1);
        QCOMPARE(model.windowFirst(), int64_t(5));
        QCOMPARE(model.entryAt(model.rowOf(7)), int64_t(7));
        QVERIFY(model.showEntry(6));  // already there: no reset
        QCOMPARE(resets.count(), 1);
        QVERIFY(model.moveWindow(100));  // clamped: the last window
        QCOMPARE(model.windowFirst(), int64_t(7));
        QCOMPARE(model.rowCount(), 5);
        QCOMPARE(model.entryAt(4), int64_t(11));
        QVERIFY(!model.moveWindow(1));
        QVERIFY(model.moveWindow(-100));
        QCOMPARE(model.windowFirst(), int64_t(0));
        // a list: the window is over its entries
        model.setEntries({1, 3, 5, 7, 9, 11});
        QCOMPARE(model.windowFirst(), int64_t(0));
        QCOMPARE(model.shownCount(), int64_t(6));
        QCOMPARE(model.rowCount(), 5);
        QCOMPARE(model.rowOf(11), -1);
        QVERIFY(model.showEntry(11));
        QCOMPARE(model.windowFirst(), int64_t(1));
        QCOMPARE(model.rowOf(11), 4);
        QCOMPARE(model.entryAt(0), int64_t(3));
        QVERIFY(!model.showEntry(4));  // not in the list
        // a range shorter than the window: all of it
        model.setRange(2, 4);
        QCOMPARE(model.rowCount(), 3);
        QCOMPARE(model.entryAt(2), int64_t(4));
    }

    void rangesAndLists() {
        auto doc = document(smallTrace());
        EventsModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        model.setDocument(doc.get());
        QSignalSpy resets(&model, &QAbstractItemModel::modelReset);

        model.setRange(3, 7);
        QCOMPARE(resets.count(), 1);
        QCOMPARE(model.rowCount(), 5);
        QCOMPARE(model.entryAt(0), int64_t(3));
        QCOMPARE(model.rowOf(7), 4);
        QCOMPARE(model.rowOf(8), -1);
        QCOMPARE(cell(model, 0, EventsModel::IndexColumn), QStringLiteral("3"));

        model.setRange(10, 500);  // clamped to the trace
        QCOMPARE(model.rowCount(), 2);

        model.setEntries({1, 6, 9, 40});  // 40 is not an entry and is dropped
        QCOMPARE(model.rowCount(), 3);
        QCOMPARE(model.entryAt(1), int64_t(6));
        QCOMPARE(model.rowOf(9), 2);
        QCOMPARE(model.rowOf(2), -1);
        QCOMPARE(model.entryAt(3), int64_t(-1));
        QCOMPARE(cell(model, 2, EventsModel::ActionColumn), QStringLiteral("free_completed"));

        model.showAll();
        QCOMPARE(model.rowCount(), 12);
        QCOMPARE(resets.count(), 4);

        model.setDocument(nullptr);
        QCOMPARE(model.rowCount(), 0);
    }

    void followsTheDeviceAndTheDocumentsLifetime() {
        auto doc = document(smallTrace());
        EventsModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        model.setDocument(doc.get());
        model.setRange(0, 1);
        doc->setDevice(3);  // a device without entries
        QCOMPARE(model.rowCount(), 0);
        doc->setDevice(0);
        QCOMPARE(model.rowCount(), 12);
        doc.reset();
        QCOMPARE(model.rowCount(), 0);
    }

    void realFixtureUnderTheTester() {
        const QString path = QStringLiteral(MEMLENS_SOURCE_DIR "/resources/example.pickle");
        auto loaded = LoadedSnapshot::load(path.toStdString(), {});
        SnapshotDocument doc(loaded);
        EventsModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        model.setDocument(&doc);
        QCOMPARE(model.rowCount(), static_cast<int>(doc.entryCount()));
        for (int row = 0; row < model.rowCount(); row += 97)
            for (int c = 0; c < model.columnCount(); ++c) (void)model.data(model.index(row, c));
        // the example's last entry is its oom
        QCOMPARE(cell(model, model.rowCount() - 1, EventsModel::ActionColumn), QStringLiteral("oom"));
    }
};

MEMLENS_GUI_TEST_MAIN(TestEventsModel)
#include "tst_eventsmodel.moc"
