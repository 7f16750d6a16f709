// AllocationSitesModel under QAbstractItemModelTester, alone and behind a recursive filter proxy:
// the trees of the synthetic snapshot's live blocks and of a range of its entries, node by node.
#include "DocumentFixture.h"
#include "QtTestMain.h"

#include "sites/AllocationSitesModel.h"

#include <QAbstractItemModelTester>
#include <QSortFilterProxyModel>
#include <QApplication>
#include <QtTest>

using namespace memlens::views;
using namespace memlens::model;
using Model = AllocationSitesModel;

class TestAllocationSitesModel : public QObject {
    Q_OBJECT

    std::shared_ptr<const Snapshot> m_snap;

    // "function location bytes % count" per row, children indented, depth first
    static QStringList dump(const QAbstractItemModel& m, const QModelIndex& parent = {}, int depth = 0) {
        QStringList out;
        for (int r = 0; r < m.rowCount(parent); ++r) {
            QStringList cells;
            for (int c = 0; c < Model::ColumnCount; ++c) cells << m.index(r, c, parent).data().toString();
            out << QString(depth * 2, QLatin1Char(' ')) + cells.join(QLatin1Char('|'));
            out += dump(m, m.index(r, 0, parent), depth + 1);
        }
        return out;
    }

    std::shared_ptr<const AllocationSites> liveAt(int64_t entry, bool skipNative) {
        StateHistory h(*m_snap, 0);
        SitesOptions o;
        o.skipNative = skipNative;
        return std::make_shared<const AllocationSites>(allocationSitesAt(*m_snap, h.stateAfter(entry), o));
    }

private slots:
    void initTestCase() { m_snap = std::make_shared<const Snapshot>(viewtest::syntheticSnapshot()); }

    void liveBlocksBottomUpAndTopDown() {
        // after entry 7: B (8 MiB - 1000, attention <- train_step:88) and C (6 MiB, adamw step <- train_step:95)
        Model up(Model::Tree::BottomUp), down(Model::Tree::TopDown);
        QAbstractItemModelTester t1(&up, QAbstractItemModelTester::FailureReportingMode::QtTest);
        QAbstractItemModelTester t2(&down, QAbstractItemModelTester::FailureReportingMode::QtTest);
        auto sites = liveAt(7, true);
        up.setSites(m_snap, sites, false);
        down.setSites(m_snap, sites, false);
        // 8 MiB - 1000 B of 14 MiB - 1000 B is 57.1 %
        QCOMPARE(dump(up), (QStringList{"attention|/home/me/model.py:57|8 MiB|57.1|1",
                                        "  train_step|/home/me/train.py:88|8 MiB|57.1|1",
                                        "step|torch/optim/adamw.py:210|6 MiB|42.9|1",
                                        "  train_step|/home/me/train.py:95|6 MiB|42.9|1"}));
        QCOMPARE(dump(down), (QStringList{"train_step|/home/me/train.py:88|8 MiB|57.1|1",
                                          "  attention|/home/me/model.py:57|8 MiB|57.1|1",
                                          "train_step|/home/me/train.py:95|6 MiB|42.9|1",
                                          "  step|torch/optim/adamw.py:210|6 MiB|42.9|1"}));
        const QModelIndex first = up.index(0, 0);
        QCOMPARE(first.data(Model::SortRole).toString(), QStringLiteral("attention"));
        QCOMPARE(up.index(0, Model::BytesColumn).data(Model::SortRole).toULongLong(), 8 * viewtest::MiB - 1000);
        QCOMPARE(up.index(0, Model::CountColumn).data(Model::SortRole).toULongLong(), 1ull);
        QVERIFY(first.data(Model::FilterRole).toString().contains(QStringLiteral("model.py")));
        const StackId stack = static_cast<StackId>(first.data(Model::StackRole).toUInt());
        QCOMPARE(m_snap->stackSize(stack), size_t(3));  // B's whole stack, native frame included
        QCOMPARE(up.describe(first), QStringLiteral("attention (/home/me/model.py:57): 8 MiB in 1 allocations"));
        QCOMPARE(up.parent(up.index(0, 0, first)), first);
        QVERIFY(up.node(first) != nullptr);
        QCOMPARE(up.node(first)->bytes, 8 * viewtest::MiB - 1000);
        QVERIFY(!up.isRange());
    }

    void withNativeFrames() {
        Model up(Model::Tree::BottomUp);
        QAbstractItemModelTester t(&up, QAbstractItemModelTester::FailureReportingMode::QtTest);
        up.setSites(m_snap, liveAt(7, false), false);
        // every stack starts with the allocator's malloc: one root
        QCOMPARE(up.rowCount(), 1);
        QCOMPARE(up.index(0, 0).data().toString(), QStringLiteral("c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc"));
        QCOMPARE(up.index(0, Model::PercentColumn).data().toString(), QStringLiteral("100.0"));
        QCOMPARE(up.rowCount(up.index(0, 0)), 2);
    }

    void aRangeOfEntries() {
        // entries 0..7 allocate A (4 MiB), B and C; A is freed at 5, so 14 MiB - 1000 B stay live
        auto sites = std::make_shared<const AllocationSites>(
            allocationSitesInRange(*m_snap, *m_snap->device(0), 0, 7, SitesOptions{true, nullptr}));
        Model down(Model::Tree::TopDown);
        QAbstractItemModelTester t(&down, QAbstractItemModelTester::FailureReportingMode::QtTest);
        down.setSites(m_snap, sites, true);
        QVERIFY(down.isRange());
        QCOMPARE(sites->totalBytes, 18 * viewtest::MiB - 1000);
        QCOMPARE(sites->liveBytes, 14 * viewtest::MiB - 1000);
        // top-down roots: train_step:88 (A 4 MiB + B) and train_step:95 (C)
        QCOMPARE(down.rowCount(), 2);
        QCOMPARE(down.index(0, Model::BytesColumn).data().toString(), QStringLiteral("12 MiB"));
        QCOMPARE(down.index(0, Model::CountColumn).data().toString(), QStringLiteral("2"));
        QCOMPARE(down.index(0, 0).data(Model::LiveBytesRole).toULongLong(), 8 * viewtest::MiB - 1000);
        QVERIFY(down.index(0, 0).data(Qt::ToolTipRole).toString().contains(QStringLiteral("still live")));
        // its children: forward (A, under torch's frames) and attention (B)
        QCOMPARE(down.rowCount(down.index(0, 0)), 2);
    }

    void behindARecursiveFilter() {
        Model up(Model::Tree::BottomUp);
        QSortFilterProxyModel proxy;
        proxy.setSourceModel(&up);
        proxy.setRecursiveFilteringEnabled(true);
        proxy.setFilterRole(Model::FilterRole);
        proxy.setFilterCaseSensitivity(Qt::CaseInsensitive);
        proxy.setSortRole(Model::SortRole);
        QAbstractItemModelTester t(&proxy, QAbstractItemModelTester::FailureReportingMode::QtTest);
        up.setSites(m_snap, liveAt(7, true), false);
        proxy.sort(Model::BytesColumn, Qt::AscendingOrder);
        QCOMPARE(proxy.index(0, 0).data().toString(), QStringLiteral("step"));
        proxy.sort(Model::BytesColumn, Qt::DescendingOrder);
        QCOMPARE(proxy.index(0, 0).data().toString(), QStringLiteral("attention"));
        // a match deep in the tree keeps its ancestors
        proxy.setFilterFixedString(QStringLiteral("TRAIN.PY:95"));
        QCOMPARE(proxy.rowCount(), 1);
        QCOMPARE(proxy.index(0, 0).data().toString(), QStringLiteral("step"));
        QCOMPARE(proxy.rowCount(proxy.index(0, 0)), 1);
        proxy.setFilterFixedString(QStringLiteral("nothing like this"));
        QCOMPARE(proxy.rowCount(), 0);
        proxy.setFilterFixedString(QString());
        QCOMPARE(proxy.rowCount(), 2);
        // swapping the data under the proxy
        up.setSites(m_snap, liveAt(4, true), false);
        QCOMPARE(proxy.rowCount(), 3);  // A, B and C live after entry 4
        up.clear();
        QCOMPARE(proxy.rowCount(), 0);
    }

    void realFixture() {
        auto doc = viewtest::fixtureDocument();
        if (!doc) QSKIP("no real snapshots");
        auto snap = doc->loaded().snapshot;
        auto sites = std::make_shared<const AllocationSites>(allocationSitesAt(*snap, doc->currentState(), SitesOptions{true, nullptr}));
        Model up(Model::Tree::BottomUp), down(Model::Tree::TopDown);
        QAbstractItemModelTester t1(&up, QAbstractItemModelTester::FailureReportingMode::QtTest);
        QAbstractItemModelTester t2(&down, QAbstractItemModelTester::FailureReportingMode::QtTest);
        up.setSites(snap, sites, false);
        down.setSites(snap, sites, false);
        QVERIFY(up.rowCount() > 1);
        // the roots add up to the whole
        uint64_t sum = 0;
        for (int r = 0; r < up.rowCount(); ++r) sum += up.node(up.index(r, 0))->bytes;
        QCOMPARE(sum, sites->totalBytes);
        QCOMPARE(sites->totalBytes, doc->currentState().requestedBytes);
    }
};

MEMLENS_GUI_TEST_MAIN(TestAllocationSitesModel)
#include "tst_allocationsitesmodel.moc"
