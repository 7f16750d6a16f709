// Stepping: next/previous entry, entry of the same allocation (never into another allocation at
// the same address), oom entries and marker starts.
#include "QtTestMain.h"
#include "TraceFixture.h"

#include "core/EventNavigation.h"

#include <QtTest>

using namespace memlens::views;
using namespace tracetest;
namespace nav = memlens::views::navigation;
using memlens::model::Action;

class TestEventNavigation : public QObject {
    Q_OBJECT

    std::shared_ptr<LoadedSnapshot> m_loaded;
    const memlens::model::TraceColumns& trace() const { return m_loaded->snapshot->devices[0].trace; }

private slots:
    void initTestCase() {
        auto entries = smallTrace();
        entries.push_back({"oom", 0, 96 * MiB, 220});                      // 12
        entries.push_back({"free_requested", slot(1), 768 * KiB, 230});     // 13: D
        entries.push_back({"free_completed", slot(1), 768 * KiB, 240});     // 14: D
        entries.push_back({"segment_free", kBase + kSegment, 2 * MiB, 250});  // 15
        m_loaded = load(entries, {{"START", "iteration 1", 115}, {"END", "iteration 1", 155}, {"START", "iteration 2", 165},
                                  {"END", "iteration 2", 235}});
    }

    void nextAndPrevious() {
        QCOMPARE(nav::nextEvent(trace(), -1), std::optional<int64_t>(0));
        QCOMPARE(nav::nextEvent(trace(), 4), std::optional<int64_t>(5));
        QCOMPARE(nav::nextEvent(trace(), 15), std::nullopt);
        QCOMPARE(nav::previousEvent(trace(), 5), std::optional<int64_t>(4));
        QCOMPARE(nav::previousEvent(trace(), 0), std::nullopt);
        QCOMPARE(nav::previousEvent(trace(), -1), std::nullopt);
    }

    void sameAllocation() {
        // B: alloc 2 -> free_requested 4 -> free_completed 5; then D reuses the address at 7
        QCOMPARE(nav::nextOfSameAllocation(trace(), 2), std::optional<int64_t>(4));
        QCOMPARE(nav::nextOfSameAllocation(trace(), 4), std::optional<int64_t>(5));
        QCOMPARE(nav::nextOfSameAllocation(trace(), 5), std::nullopt);  // D is another allocation
        QCOMPARE(nav::previousOfSameAllocation(trace(), 5), std::optional<int64_t>(4));
        QCOMPARE(nav::previousOfSameAllocation(trace(), 4), std::optional<int64_t>(2));
        QCOMPARE(nav::previousOfSameAllocation(trace(), 2), std::nullopt);
        QCOMPARE(nav::previousOfSameAllocation(trace(), 7), std::nullopt);  // D's alloc: nothing before
        QCOMPARE(nav::nextOfSameAllocation(trace(), 7), std::optional<int64_t>(13));
        QCOMPARE(nav::previousOfSameAllocation(trace(), 14), std::optional<int64_t>(13));
        QCOMPARE(nav::previousOfSameAllocation(trace(), 13), std::optional<int64_t>(7));  // not B's free
        // A is never freed
        QCOMPARE(nav::nextOfSameAllocation(trace(), 1), std::nullopt);
        // E's free has no alloc in the trace
        QCOMPARE(nav::previousOfSameAllocation(trace(), 10), std::nullopt);
        // not allocation entries
        QCOMPARE(nav::nextOfSameAllocation(trace(), 6), std::nullopt);   // oom
        QCOMPARE(nav::nextOfSameAllocation(trace(), 11), std::nullopt);  // snapshot
        QCOMPARE(nav::nextOfSameAllocation(trace(), -1), std::nullopt);
        // segments: segment_alloc 0 -> (segment_free 15 is at another address)
        QCOMPARE(nav::nextOfSameAllocation(trace(), 0), std::nullopt);
    }

    void segmentLifetimes() {
        const auto loaded = load({{"segment_alloc", kBase, 2 * MiB}, {"alloc", kBase, 1 * MiB}, {"segment_map", kBase, 2 * MiB},
                                  {"segment_free", kBase, 4 * MiB}, {"segment_alloc", kBase, 2 * MiB}});
        const auto& t = loaded->snapshot->devices[0].trace;
        QCOMPARE(nav::nextOfSameAllocation(t, 0), std::optional<int64_t>(2));  // skips the block alloc
        QCOMPARE(nav::nextOfSameAllocation(t, 2), std::optional<int64_t>(3));
        QCOMPARE(nav::nextOfSameAllocation(t, 3), std::nullopt);
        QCOMPARE(nav::previousOfSameAllocation(t, 4), std::nullopt);
        QCOMPARE(nav::previousOfSameAllocation(t, 3), std::optional<int64_t>(2));
    }

    void oom() {
        QCOMPARE(nav::nextWithAction(trace(), -1, Action::Oom), std::optional<int64_t>(6));
        QCOMPARE(nav::nextWithAction(trace(), 6, Action::Oom), std::optional<int64_t>(12));
        QCOMPARE(nav::nextWithAction(trace(), 12, Action::Oom), std::nullopt);
        QCOMPARE(nav::previousWithAction(trace(), 12, Action::Oom), std::optional<int64_t>(6));
        QCOMPARE(nav::previousWithAction(trace(), 6, Action::Oom), std::nullopt);
        QCOMPARE(nav::previousWithAction(trace(), 1000, Action::Oom), std::optional<int64_t>(12));
    }

    void markers() {
        const TimelineMarkers m = TimelineMarkers::compute(*m_loaded->snapshot, 0);
        QCOMPARE(m.stops(), (std::vector<int64_t>{2, 7}));
        QCOMPARE(nav::nextMarker(m, -1), std::optional<int64_t>(2));
        QCOMPARE(nav::nextMarker(m, 2), std::optional<int64_t>(7));
        QCOMPARE(nav::nextMarker(m, 7), std::nullopt);
        QCOMPARE(nav::previousMarker(m, 7), std::optional<int64_t>(2));
        QCOMPARE(nav::previousMarker(m, 5), std::optional<int64_t>(2));
        QCOMPARE(nav::previousMarker(m, 2), std::nullopt);
    }
};

MEMLENS_CORE_TEST_MAIN(TestEventNavigation)
#include "tst_eventnavigation.moc"
