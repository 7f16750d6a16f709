// StackModel under QAbstractItemModelTester: folded runs of C++ and library frames as expandable
// rows, their children, every column and role, the copied text, and resets between stacks.
#include "DocumentFixture.h"
#include "QtTestMain.h"

#include "stack/StackModel.h"

#include <QAbstractItemModelTester>
#include <QApplication>
#include <QtTest>

using namespace memlens::views;
using namespace memlens::model;

class TestStackModel : public QObject {
    Q_OBJECT

    std::shared_ptr<const Snapshot> m_snap;
    StackId m_long = 0;

    static QString cell(const QAbstractItemModel& m, int row, int col, const QModelIndex& parent = {}) {
        return m.index(row, col, parent).data().toString();
    }

private slots:
    // the stack with the most frames
    void initTestCase() {
        m_snap = std::make_shared<const Snapshot>(viewtest::syntheticSnapshot());
        for (StackId s = 1; s < m_snap->stackCount(); ++s)
            if (!m_long || m_snap->stackSize(s) > m_snap->stackSize(m_long)) m_long = s;
        QVERIFY(m_long != 0);
        QCOMPARE(m_snap->stackSize(m_long), size_t(6));
    }

    void foldsAndShowsAStack() {
        StackModel m;
        QAbstractItemModelTester tester(&m, QAbstractItemModelTester::FailureReportingMode::QtTest);
        QCOMPARE(m.rowCount(), 0);
        m.setStack(m_snap, m_long);
        // malloc (??), at::empty_cuda (EmptyTensor.cpp) -> one fold; linear + _call_impl (torch) ->
        // one fold; forward and train_step (user)
        QCOMPARE(m.frameCount(), 6);
        QCOMPARE(m.rowCount(), 4);
        QCOMPARE(m.columnCount(), int(StackModel::ColumnCount));
        QCOMPARE(cell(m, 0, StackModel::FunctionColumn), QStringLiteral("\u2026 2 C++ frames"));
        QCOMPARE(cell(m, 0, StackModel::KindColumn), QStringLiteral("C++"));
        QCOMPARE(cell(m, 1, StackModel::FunctionColumn), QStringLiteral("\u2026 2 frames in torch"));
        QCOMPARE(cell(m, 1, StackModel::KindColumn), QStringLiteral("Python \u00b7 torch"));
        QCOMPARE(cell(m, 2, StackModel::FunctionColumn), QStringLiteral("forward"));
        QCOMPARE(cell(m, 2, StackModel::LocationColumn), QStringLiteral("/home/me/model.py:42"));
        QCOMPARE(cell(m, 2, StackModel::KindColumn), QStringLiteral("Python"));
        QCOMPARE(cell(m, 3, StackModel::FunctionColumn), QStringLiteral("train_step"));
        QVERIFY(m.index(0, 0).data(StackModel::FoldedRole).toBool());
        QVERIFY(!m.index(2, 0).data(StackModel::FoldedRole).toBool());
        QCOMPARE(m.index(2, 0).data(StackModel::FrameKindRole).toInt(), int(FrameKind::User));
        QCOMPARE(m.index(0, 0).data(StackModel::FrameKindRole).toInt(), int(FrameKind::Native));
        QCOMPARE(m.index(1, 0).data(StackModel::FrameIndexRole).toUInt(), 2u);
        QVERIFY(m.index(2, 0).data(Qt::FontRole).value<QFont>().bold());  // the user's code stands out
        QVERIFY(!m.index(2, 0).data(Qt::DecorationRole).isNull());
        QVERIFY(m.index(2, 0).data(Qt::ToolTipRole).toString().contains(QStringLiteral("/home/me/model.py:42")));

        // the folded frames are the children
        const QModelIndex native = m.index(0, 0);
        QCOMPARE(m.rowCount(native), 2);
        QCOMPARE(cell(m, 0, StackModel::FunctionColumn, native),
                 QStringLiteral("c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc"));
        QCOMPARE(cell(m, 0, StackModel::LocationColumn, native), QString());  // '??' has no location
        QCOMPARE(cell(m, 1, StackModel::LocationColumn, native), QStringLiteral("EmptyTensor.cpp"));  // line 0 left out
        const QModelIndex torch = m.index(1, 0);
        QCOMPARE(m.rowCount(torch), 2);
        QCOMPARE(cell(m, 0, StackModel::LocationColumn, torch), QStringLiteral("torch/nn/modules/linear.py:125"));
        QCOMPARE(m.parent(m.index(1, 0, torch)), torch);
        QCOMPARE(m.rowCount(m.index(2, 0)), 0);
        QCOMPARE(m.rowCount(m.index(0, 0, torch)), 0);
        QCOMPARE(m.index(1, 0, torch).data(StackModel::FrameIndexRole).toUInt(), 3u);

        // text for the clipboard: every frame, full paths, innermost first
        const QStringList lines = m.stackText().split(QLatin1Char('\n'));
        QCOMPARE(lines.size(), 6);
        QCOMPARE(lines[2], QStringLiteral("linear (/venv/lib/python3.11/site-packages/torch/nn/modules/linear.py:125)"));
        QCOMPARE(lines[5], QStringLiteral("train_step (/home/me/train.py:88)"));
        QCOMPARE(m.framesText({m.index(1, 0), m.index(3, 0)}).split(QLatin1Char('\n')).size(), 3);
    }

    void resetsBetweenStacks() {
        StackModel m;
        QAbstractItemModelTester tester(&m, QAbstractItemModelTester::FailureReportingMode::QtTest);
        QSignalSpy resets(&m, &QAbstractItemModel::modelReset);
        m.setStack(m_snap, m_long);
        StackId other = 0;
        for (StackId s = 1; s < m_snap->stackCount(); ++s)
            if (s != m_long && m_snap->stackSize(s) == 3) other = s;
        QVERIFY(other != 0);
        m.setStack(m_snap, other);
        QCOMPARE(m.frameCount(), 3);
        QVERIFY(m.rowCount() >= 2);
        m.setStack(m_snap, 0);  // the empty stack
        QCOMPARE(m.rowCount(), 0);
        QCOMPARE(m.stackText(), QString());
        m.setStack(m_snap, StackId(999999));  // out of range: empty, no crash
        QCOMPARE(m.rowCount(), 0);
        m.clear();
        QCOMPARE(m.rowCount(), 0);
        QCOMPARE(resets.count(), 5);
        QCOMPARE(m.headerData(StackModel::LocationColumn, Qt::Horizontal).toString(), QStringLiteral("Location"));
    }

    void unknownLines() {
        // a frame with line (size_t)-1 reads "unknown"
        using namespace synth;
        P f = list({frame("init_gpu_context", "/venv/site-packages/torch/_subclasses/fake_tensor.py", 1),
                    frame("main", "run.py", 3)});
        Snapshot s = read(snapshot({segment(0, 0x1000000, {{0x1000000, 2u << 20, 100, "active_allocated", f}})}, {{}}));
        // the reader marks lines it cannot hold as unknown; do it by hand here
        s.frames[s.stackBegin(s.devices[0].blocks[0].stack)[0]].lineKnown = false;
        auto snap = std::make_shared<const Snapshot>(std::move(s));
        StackModel m;
        QAbstractItemModelTester tester(&m, QAbstractItemModelTester::FailureReportingMode::QtTest);
        m.setStack(snap, snap->devices[0].blocks[0].stack);
        QCOMPARE(cell(m, 0, StackModel::LocationColumn), QStringLiteral("torch/_subclasses/fake_tensor.py:unknown"));
        QCOMPARE(cell(m, 1, StackModel::LocationColumn), QStringLiteral("run.py:3"));
    }

    void realFixtureStacks() {
        auto doc = viewtest::fixtureDocument();
        if (!doc) QSKIP("no real snapshots");
        auto snap = doc->loaded().snapshot;
        StackModel m;
        QAbstractItemModelTester tester(&m, QAbstractItemModelTester::FailureReportingMode::QtTest);
        // the longest stack of the file: folded well below its frame count
        StackId longest = 1;
        for (StackId s = 1; s < snap->stackCount(); ++s)
            if (snap->stackSize(s) > snap->stackSize(longest)) longest = s;
        m.setStack(snap, longest);
        QVERIFY(m.frameCount() > 20);
        QVERIFY(m.rowCount() < m.frameCount());
        int frames = 0;
        for (int r = 0; r < m.rowCount(); ++r) frames += m.index(r, 0).data(StackModel::FoldedRole).toBool() ? m.rowCount(m.index(r, 0)) : 1;
        QCOMPARE(frames, m.frameCount());
    }
};

MEMLENS_GUI_TEST_MAIN(TestStackModel)
#include "tst_stackmodel.moc"
