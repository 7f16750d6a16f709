// TimelineMarkers: START/END annotations paired per name with a stack and mapped to entries by
// time; unmatched ends clamp to the start of the trace, unmatched starts to its end; lanes for
// overlapping ranges; oom and snapshot entries.
#include "QtTestMain.h"
#include "TraceFixture.h"

#include "core/TimelineMarkers.h"

#include <QtTest>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

using namespace memlens::views;
using namespace tracetest;

class TestTimelineMarkers : public QObject {
    Q_OBJECT

    static QStringList describe(const TimelineMarkers& m) {
        QStringList out;
        for (const auto& r : m.ranges())
            out << QStringLiteral("%1 %2-%3 lane %4%5%6")
                       .arg(QString::fromUtf8(r.name.data(), static_cast<qsizetype>(r.name.size())))
                       .arg(r.first)
                       .arg(r.last)
                       .arg(r.lane)
                       .arg(r.startSeen ? "" : " no-start")
                       .arg(r.endSeen ? "" : " no-end");
        return out;
    }

private slots:
    void pairsAndClamps() {
        // entries at times 100, 110, ... 210 (smallTrace)
        const auto loaded = load(smallTrace(), {
                                                   {"END", "iteration 0", 105},           // began before recording
                                                   {"START", "iteration 1", 115},
                                                   {"START", "Optimizer.step", 125},
                                                   {"END", "Optimizer.step", 145},
                                                   {"END", "iteration 1", 155},
                                                   {"START", "iteration 2", 165},          // never ends
                                                   {"START", "other device", 120, 1},      // not device 0
                                                   {"START", "after the trace", 500},      // no entry inside
                                               });
        const TimelineMarkers m = TimelineMarkers::compute(*loaded->snapshot, 0);
        QCOMPARE(describe(m), (QStringList{
                                  QStringLiteral("iteration 0 0-0 lane 0 no-start"),
                                  QStringLiteral("iteration 1 2-5 lane 0"),
                                  QStringLiteral("Optimizer.step 3-4 lane 1"),
                                  QStringLiteral("iteration 2 7-11 lane 0 no-end"),
                              }));
        QCOMPARE(m.laneCount(), 2);
        QCOMPARE(m.stops(), (std::vector<int64_t>{0, 2, 7}));  // not the optimizer step inside iteration 1
        QCOMPARE(m.points().size(), size_t(2));
        QCOMPARE(m.points()[0].entry, int64_t(6));
        QCOMPARE(m.points()[0].action, memlens::model::Action::Oom);
        QCOMPARE(m.points()[1].entry, int64_t(11));
        QCOMPARE(m.points()[1].action, memlens::model::Action::Snapshot);
    }

    void nestedRangesOfOneName() {
        const auto loaded = load(smallTrace(), {{"START", "f", 100}, {"START", "f", 120}, {"END", "f", 130}, {"END", "f", 200}});
        const TimelineMarkers m = TimelineMarkers::compute(*loaded->snapshot, 0);
        QCOMPARE(describe(m), (QStringList{QStringLiteral("f 0-10 lane 0"), QStringLiteral("f 2-3 lane 1")}));
    }

    // Each range takes the lowest lane whose earlier ranges all ended before it begins (checked
    // here by a scan of every lane, the rule as written): random START/END notes of five names,
    // and thousands of ranges left open (each needs a lane of its own to the end of the trace).
    void lanesAreTheLowestFree() {
        std::mt19937 rng(7);
        for (int round = 0; round < 3; ++round) {
            std::vector<Note> notes;
            const int open = round == 2 ? 3000 : 0;
            for (int i = 0; i < open; ++i) notes.push_back({"START", "open " + std::to_string(i), 95 + i % 120});
            for (int i = 0; i < 600; ++i)
                notes.push_back({rng() % 2 ? "START" : "END", std::string(1, char('a' + rng() % 5)),
                                 static_cast<int64_t>(95 + rng() % 121)});
            const auto loaded = load(smallTrace(), notes);
            const TimelineMarkers m = TimelineMarkers::compute(*loaded->snapshot, 0);
            QVERIFY(m.ranges().size() >= size_t(open) + 100);
            std::vector<int64_t> laneEnd;
            for (const auto& r : m.ranges()) {
                size_t lane = 0;
                while (lane < laneEnd.size() && laneEnd[lane] >= r.first) ++lane;
                if (lane == laneEnd.size()) laneEnd.push_back(0);
                laneEnd[lane] = std::max(r.first, r.last);
                QCOMPARE(r.lane, static_cast<int>(lane));
            }
            QCOMPARE(m.laneCount(), static_cast<int>(laneEnd.size()));
            // ranges without an end all cover the last entry: a lane each
            const auto unended = std::count_if(m.ranges().begin(), m.ranges().end(), [](const RangeMarker& r) { return !r.endSeen; });
            QVERIFY(m.laneCount() >= unended);
            if (open) QVERIFY(unended >= open * 9 / 10);  // those that begin after the trace are dropped
            // laneRanges: every range once, in its own lane, by first entry, none overlapping the
            // one before it (what the drawing's bisection relies on)
            std::vector<int> seen(m.ranges().size(), 0);
            for (int lane = 0; lane < m.laneCount(); ++lane) {
                const auto in = m.laneRanges(lane);
                QVERIFY(!in.empty());  // a lane exists because a range was put in it
                for (size_t k = 0; k < in.size(); ++k) {
                    const RangeMarker& r = m.ranges()[in[k]];
                    QCOMPARE(r.lane, lane);
                    ++seen[in[k]];
                    if (k > 0) {
                        const RangeMarker& before = m.ranges()[in[k - 1]];
                        QVERIFY(in[k - 1] < in[k]);
                        QVERIFY(std::max(before.first, before.last) < r.first);
                    }
                }
            }
            QVERIFY(std::all_of(seen.begin(), seen.end(), [](int n) { return n == 1; }));
            QVERIFY(m.laneRanges(-1).empty());
            QVERIFY(m.laneRanges(m.laneCount()).empty());
        }
    }

    void withoutTimesNoRanges() {
        auto entries = smallTrace();
        for (auto& e : entries) e.time = -1;
        const auto loaded = load(entries, {{"START", "iteration 1", 115}, {"END", "iteration 1", 155}});
        const TimelineMarkers m = TimelineMarkers::compute(*loaded->snapshot, 0);
        QVERIFY(m.ranges().empty());
        QCOMPARE(m.points().size(), size_t(2));  // oom and snapshot still
        QVERIFY(TimelineMarkers::compute(*loaded->snapshot, 7).points().empty());  // no such device
    }
};

MEMLENS_CORE_TEST_MAIN(TestTimelineMarkers)
#include "tst_timelinemarkers.moc"
