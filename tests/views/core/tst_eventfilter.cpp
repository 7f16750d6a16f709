// EventFilter: by action, size range, text in the top frame or the address, and entry range.
#include "QtTestMain.h"
#include "TraceFixture.h"

#include "core/EventFilter.h"

#include <QtTest>

using namespace memlens::views;
using namespace tracetest;
using memlens::model::Action;

class TestEventFilter : public QObject {
    Q_OBJECT

    std::shared_ptr<LoadedSnapshot> m_loaded;
    std::vector<int64_t> run(const EventFilter& f) const { return f.apply(*m_loaded->snapshot, m_loaded->snapshot->devices[0].trace); }

private slots:
    void initTestCase() { m_loaded = load(smallTrace()); }

    void everything() {
        EventFilter f;
        QVERIFY(f.onlyRange());
        QCOMPARE(run(f).size(), size_t(12));
    }

    void actions() {
        EventFilter f;
        f.actions = EventFilter::bit(Action::Alloc);
        QVERIFY(!f.onlyRange());
        QCOMPARE(run(f), (std::vector<int64_t>{1, 2, 3, 7}));
        f.actions = EventFilter::bit(Action::Oom) | EventFilter::bit(Action::Snapshot);
        QCOMPARE(run(f), (std::vector<int64_t>{6, 11}));
    }

    void sizes() {
        EventFilter f;
        f.minSize = 512 * KiB;
        f.maxSize = 1 * MiB;
        QCOMPARE(run(f), (std::vector<int64_t>{1, 2, 4, 5, 7}));  // not 11: the snapshot entry says 1.75 MiB
        f.maxSize = 600 * KiB;
        QCOMPARE(run(f), (std::vector<int64_t>{2, 4, 5}));
    }

    void text() {
        EventFilter f;
        f.text = "GRADS";  // case does not matter; matches the top frame "grads (model.py:40)"
        QCOMPARE(run(f), (std::vector<int64_t>{3, 8, 9}));
        f.text = "0x7f0000100000";  // slot 1's address
        QCOMPARE(run(f), (std::vector<int64_t>{2, 4, 5, 7}));
        f.text = "7f00002";  // part of slot 2's
        QCOMPARE(run(f), (std::vector<int64_t>{3, 8, 9}));
        f.text = "nothing like this";
        QVERIFY(run(f).empty());
    }

    void rangeAndCombination() {
        EventFilter f;
        f.first = 3;
        f.last = 9;
        QVERIFY(f.onlyRange());
        f.actions = EventFilter::bit(Action::FreeCompleted);
        QCOMPARE(run(f), (std::vector<int64_t>{5, 9}));
        f.first = 50;
        QVERIFY(run(f).empty());
    }

    void cancelled() {
        std::atomic<bool> stop(true);
        EventFilter f;
        f.actions = EventFilter::bit(Action::Alloc);
        QVERIFY(f.apply(*m_loaded->snapshot, m_loaded->snapshot->devices[0].trace, &stop).empty());
    }
};

MEMLENS_CORE_TEST_MAIN(TestEventFilter)
#include "tst_eventfilter.moc"
