// Where a session's NVML samples are drawn on the timeline (placeProcessSamples, maxInForce),
// worked out by hand on a four-entry trace with times 100, 200, 200, 400 µs.
#include "QtTestMain.h"

#include "core/EntryAxis.h"
#include "core/ProcessSamplesPlacement.h"

#include <QtTest>

using namespace memlens::views;
using memlens::model::TimedBytes;

namespace {

const memlens::model::TimeColumn kTimes{100, 200, 200, 400};

QString dump(const std::vector<PlacedSample>& v) {
    QStringList out;
    for (const auto& p : v) out << QStringLiteral("%1:%2").arg(p.x).arg(p.bytes);
    return out.join(QLatin1Char(' '));
}

} // namespace

class TestProcessSamples : public QObject {
    Q_OBJECT
private slots:
    void indexAxis() {
        // 50 is in force when the trace starts; 150 is half way from entry 0 to 1; 300 half way
        // from entry 2 (the last at 200) to 3; 500 is after the trace
        const auto placed = placeProcessSamples({{50, 7}, {150, 8}, {300, 9}, {500, 10}}, kTimes, EntryAxis::byIndex(4));
        QCOMPARE(dump(placed), QStringLiteral("0:7 0.5:8 2.5:9"));
    }

    void timeAxis() {
        const auto placed = placeProcessSamples({{50, 7}, {150, 8}, {300, 9}, {500, 10}}, kTimes, EntryAxis::byTime(kTimes));
        QCOMPARE(dump(placed), QStringLiteral("0:7 50:8 200:9"));
    }

    void sampleAtTheFirstEntryReplacesTheEarlierOne() {
        const auto placed = placeProcessSamples({{50, 7}, {100, 8}}, kTimes, EntryAxis::byTime(kTimes));
        QCOMPARE(dump(placed), QStringLiteral("0:8"));
    }

    void onlyEarlierSamples() {
        QCOMPARE(dump(placeProcessSamples({{10, 1}, {50, 7}}, kTimes, EntryAxis::byIndex(4))), QStringLiteral("0:7"));
    }

    void nothingToPlace() {
        QVERIFY(placeProcessSamples({{500, 1}}, kTimes, EntryAxis::byIndex(4)).empty());    // after the trace
        QVERIFY(placeProcessSamples({{150, 1}}, {}, EntryAxis::byIndex(0)).empty());        // no times
        QVERIFY(placeProcessSamples({}, kTimes, EntryAxis::byIndex(4)).empty());            // no samples
    }

    void largestInForce() {
        const std::vector<PlacedSample> placed{{0, 7}, {0.5, 8}, {2.5, 3}};
        QCOMPARE(maxInForce(placed, 0, 3), 8.0);
        QCOMPARE(maxInForce(placed, 0.6, 2.4), 8.0);  // 8 holds from 0.5 to 2.5
        QCOMPARE(maxInForce(placed, 2.6, 3), 3.0);    // the last holds to the end
        QCOMPARE(maxInForce(placed, -2, -1), 0.0);    // before the first
        QCOMPARE(maxInForce({}, 0, 1), 0.0);
    }
};

MEMLENS_CORE_TEST_MAIN(TestProcessSamples)
#include "tst_processsamples.moc"
