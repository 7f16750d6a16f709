// StackView with documents: the current entry's stack when nothing is selected, the selected
// allocation's stack, the reasons shown for an empty stack, unfolding, copying, no document, and
// a real fixture.
#include "DocumentFixture.h"
#include "QtTestMain.h"

#include "common/ByteText.h"
#include "stack/StackModel.h"
#include "stack/StackView.h"

#include <QAbstractItemModelTester>
#include <QApplication>
#include <QClipboard>
#include <QToolButton>
#include <QTreeView>
#include <QtTest>

using namespace memlens::views;

class TestStackView : public QObject {
    Q_OBJECT
private slots:
    void withoutADocument() {
        StackView v;
        v.show();
        QCOMPARE(v.titleText(), QStringLiteral("No snapshot open"));
        QVERIFY(!v.placeholderText().isEmpty());
        QCOMPARE(v.model()->rowCount(), 0);
    }

    void followsTheCurrentEntry() {
        auto doc = viewtest::syntheticDocument();
        StackView v;
        // the view's model as the view drives it: a broken change notification fails the test
        QAbstractItemModelTester tester(v.model(), QAbstractItemModelTester::FailureReportingMode::QtTest);
        v.resize(700, 400);
        v.setDocument(doc.get());
        v.show();
        // entry 7 is A's free_completed, with A's stack (6 frames)
        QCOMPARE(v.titleText(), QStringLiteral("Entry #7: free_completed of 4 MiB at 0x7f0000000000"));
        QCOMPARE(v.model()->frameCount(), 6);
        QVERIFY(v.placeholderText().isEmpty());
        doc->setCurrentEvent(4);  // C's alloc: malloc, adamw step, train_step
        QCOMPARE(v.titleText(), QStringLiteral("Entry #4: alloc of 6 MiB at 0x7f1000000000"));
        QCOMPARE(v.model()->frameCount(), 3);
        QCOMPARE(v.model()->index(1, StackModel::FunctionColumn).data().toString(), QStringLiteral("step"));
        QCOMPARE(v.model()->index(1, StackModel::KindColumn).data().toString(), QStringLiteral("Python \u00b7 torch"));
        // a segment entry has no stack: the reasons show
        doc->setCurrentEvent(3);
        QCOMPARE(v.model()->frameCount(), 0);
        QVERIFY(v.placeholderText().contains(QStringLiteral("No stack was recorded")));
        QVERIFY(v.placeholderText().contains(QStringLiteral("before recording started")));
        doc->setCurrentEvent(-1);
        QCOMPARE(v.titleText(), QStringLiteral("Before the first entry"));
    }

    void showsTheSelectedAllocation() {
        auto doc = viewtest::syntheticDocument();
        StackView v;
        v.setDocument(doc.get());
        const auto& t = doc->deviceData().trace;
        doc->selectAllocation(t.stack[2], QStringLiteral("8 MiB block at 0x7f0000400000"));
        QCOMPARE(v.titleText(), QStringLiteral("8 MiB block at 0x7f0000400000"));
        QCOMPARE(v.model()->stack(), t.stack[2]);
        QCOMPARE(v.model()->index(1, 0).data().toString(), QStringLiteral("attention"));
        doc->setCurrentEvent(4);  // the selection stays while the entry moves
        QCOMPARE(v.model()->stack(), t.stack[2]);
        // an allocation without a stack
        doc->selectAllocation(0, QStringLiteral("a block allocated before recording"));
        QCOMPARE(v.model()->frameCount(), 0);
        QVERIFY(v.placeholderText().contains(QStringLiteral("No stack was recorded")));
    }

    void unfoldsAndCopies() {
        auto doc = viewtest::syntheticDocument();
        StackView v;
        v.resize(700, 400);
        v.setDocument(doc.get());
        v.show();
        QVERIFY(QTest::qWaitForWindowExposed(&v));
        const QModelIndex fold = v.model()->index(0, 0);
        QVERIFY(fold.data(StackModel::FoldedRole).toBool());
        QVERIFY(!v.tree()->isExpanded(fold));  // folded by default
        auto* showAll = v.findChild<QToolButton*>(QStringLiteral("showAllFrames"));
        QVERIFY(showAll);
        showAll->setChecked(true);
        QVERIFY(v.tree()->isExpanded(fold));
        showAll->setChecked(false);
        QVERIFY(!v.tree()->isExpanded(fold));

        v.copy();
        const QStringList lines = QApplication::clipboard()->text().split(QLatin1Char('\n'));
        QCOMPARE(lines.size(), 6);
        QCOMPARE(lines.last(), QStringLiteral("train_step (/home/me/train.py:88)"));
        // with a selection, only the selected frames
        v.tree()->selectionModel()->select(v.model()->index(2, 0), QItemSelectionModel::Select | QItemSelectionModel::Rows);
        v.copy();
        QCOMPARE(QApplication::clipboard()->text(), QStringLiteral("forward (/home/me/model.py:42)"));
    }

    void realFixture() {
        auto doc = viewtest::fixtureDocument();
        if (!doc) QSKIP("no real snapshots");
        StackView v;
        QAbstractItemModelTester tester(v.model(), QAbstractItemModelTester::FailureReportingMode::QtTest);
        v.resize(700, 400);
        v.setDocument(doc.get());
        v.show();
        const auto oom = viewtest::fixtureOom();  // the oom entry, its size and frames from Python's pickle
        QVERIFY2(oom, "the oracle found no oom entry in the fixture");
        doc->setDevice(oom->device);
        doc->setCurrentEvent(oom->index);  // a long mixed stack
        QCOMPARE(v.titleText(), QStringLiteral("Entry #%1: oom of %2").arg(oom->index).arg(formatBytes(double(oom->size))));
        QCOMPARE(v.model()->frameCount(), oom->frames);
        QVERIFY(v.model()->rowCount() < v.model()->frameCount() / 2);
        // the C++ frames above the first Python frame fold into one row
        QVERIFY(oom->leadingNativeFrames > 1);
        QCOMPARE(v.model()->index(0, 0).data().toString(), QStringLiteral("\u2026 %1 C++ frames").arg(oom->leadingNativeFrames));
    }

    // a frame of generated code with its FX node (augment_with_fx_traces): named in the function
    // column, its original model code under the stack; the entry's metadata in the title
    void fxNodeAndMetadata() {
        auto doc = viewtest::newerDocument();
        StackView v;
        v.resize(700, 400);
        v.setDocument(doc.get());
        v.show();
        doc->setCurrentEvent(1);
        QCOMPARE(v.titleText(), QStringLiteral("Entry #1: alloc of 977 KiB at 0x7f0000000000 · phase=train step=1"));
        QCOMPARE(v.model()->frameCount(), 2);
        const QString top = v.model()->index(0, StackModel::FunctionColumn).data().toString();
        QVERIFY2(top.contains(QStringLiteral("FX node addmm (call_function: aten.addmm.default)")), qPrintable(top));
        QVERIFY2(v.fxText().contains(QStringLiteral("x = self.fc(x)")), qPrintable(v.fxText()));
        doc->setCurrentEvent(2);  // no frames: no FX panel; the compiled region in the title
        QVERIFY(v.fxText().isEmpty());
        QVERIFY2(v.titleText().endsWith(QStringLiteral("· phase=eval · Torch-Compiled Region: 0/0")), qPrintable(v.titleText()));
    }

};

MEMLENS_GUI_TEST_MAIN(TestStackView)
#include "tst_stackview.moc"
