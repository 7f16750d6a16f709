// TimelineBinning, EntryAxis and SeriesPyramid without a window: for random series, ranges and
// widths, in index and time mode (with repeated times), every column's entries and min/max
// envelope must equal a brute-force scan of the raw series that applies the definition directly,
// with and without the pyramid of block summaries.
#include "QtTestMain.h"

#include "core/EntryAxis.h"
#include "core/SeriesPyramid.h"
#include "core/TimelineBinning.h"

#include <QtTest>

#include <limits>
#include <random>
#include <vector>

using namespace memlens::views;

namespace {

struct Brute {
    int64_t first = std::numeric_limits<int64_t>::max(), last = std::numeric_limits<int64_t>::min();
    int64_t min = std::numeric_limits<int64_t>::max(), max = std::numeric_limits<int64_t>::min();
};

// Entry i (i = -1: the state before the first entry, from -infinity) holds over [x(i), x(i+1));
// a column [cs, ce) shows it if the spans meet, or if it has zero width and lies inside.
Brute bruteForce(const std::vector<double>& xs, double endX, const std::vector<int64_t>& series, int64_t before,
                 double cs, double ce) {
    Brute b;
    const int64_t n = static_cast<int64_t>(xs.size());
    for (int64_t i = -1; i < n; ++i) {
        const double from = i < 0 ? -std::numeric_limits<double>::infinity() : xs[static_cast<size_t>(i)];
        const double to = i + 1 < n ? xs[static_cast<size_t>(i + 1)] : endX;
        const bool meets = from < ce && (to > cs || from >= cs);
        if (!meets) continue;
        const int64_t v = i < 0 ? before : series[static_cast<size_t>(i)];
        b.first = std::min(b.first, i);
        b.last = std::max(b.last, i);
        b.min = std::min(b.min, v);
        b.max = std::max(b.max, v);
    }
    return b;
}

} // namespace

class TestTimelineBinning : public QObject {
    Q_OBJECT

private slots:
    void indexAxis() {
        const EntryAxis a = EntryAxis::byIndex(10);
        QCOMPARE(a.startX(), 0.0);
        QCOMPARE(a.endX(), 10.0);
        QCOMPARE(a.entryAt(-0.5), int64_t(-1));
        QCOMPARE(a.entryAt(0.0), int64_t(0));
        QCOMPARE(a.entryAt(3.7), int64_t(3));
        QCOMPARE(a.entryAt(42.0), int64_t(9));
        QCOMPARE(a.firstAtOrAfter(3.2), int64_t(4));
        QCOMPARE(a.firstAtOrAfter(3.0), int64_t(3));
        QCOMPARE(a.firstAtOrAfter(-5.0), int64_t(0));
        QCOMPARE(a.firstAtOrAfter(11.0), int64_t(10));
    }

    void timeAxisCountsFromTheFirstEntry() {
        const memlens::model::TimeColumn t = {1000, 1000, 1500, 4000};
        const EntryAxis a = EntryAxis::byTime(t);
        QVERIFY(a.isTime());
        QCOMPARE(a.x(0), 0.0);
        QCOMPARE(a.x(3), 3000.0);
        QCOMPARE(a.endX(), 3001.0);
        QCOMPARE(a.entryAt(0.0), int64_t(1));  // the last of equal times
        QCOMPARE(a.entryAt(499.0), int64_t(1));
        QCOMPARE(a.firstAtOrAfter(0.0), int64_t(0));
        QCOMPARE(a.firstAtOrAfter(1.0), int64_t(2));
        QVERIFY(EntryAxis::isNonDecreasing(t));
        QVERIFY(!EntryAxis::isNonDecreasing(memlens::model::TimeColumn{3, 2}));
    }

    void timesOutOfOrderFoundInAnyBlock() {
        // 1,000 times over 16 blocks of the column, at 1, 2 and 4 bytes a row, and a -1 (a missing
        // time, kept aside); each one step back, wherever it is, makes them unordered
        std::vector<int64_t> times(1000);
        for (size_t i = 0; i < times.size(); ++i) times[i] = 1'000'000 + int64_t(i) * (i < 300 ? 3 : i < 600 ? 700 : 90'000);
        const auto column = [](const std::vector<int64_t>& v) {
            memlens::model::TimeColumn c;
            for (int64_t x : v) c.push_back(x);
            return c;
        };
        QVERIFY(EntryAxis::isNonDecreasing(column(times)));
        for (size_t at : {size_t(1), size_t(63), size_t(64), size_t(128), size_t(450), size_t(999)}) {
            std::vector<int64_t> back = times;
            back[at] = back[at - 1] - 1;
            QVERIFY2(!EntryAxis::isNonDecreasing(column(back)), qPrintable(QStringLiteral("a step back at %1").arg(at)));
        }
        std::vector<int64_t> missing = times;
        missing[500] = -1;
        QVERIFY(!EntryAxis::isNonDecreasing(column(missing)));
        missing[0] = -1;
        missing[500] = times[500];
        QVERIFY(EntryAxis::isNonDecreasing(column(missing)));  // -1 first, then rising
    }

    void handComputedColumns() {
        // 10 entries over 5 columns: two entries per column, plus the one still holding at its left
        // edge when that edge falls inside an entry.
        const std::vector<int64_t> v = {5, 1, 7, 3, 3, 9, 0, 2, 8, 4};
        const TimelineBinning b(EntryAxis::byIndex(10), 0, 10, 5);
        QCOMPARE(b.width(), 5);
        QCOMPARE(b.columns()[0].first, int64_t(0));
        QCOMPARE(b.columns()[0].last, int64_t(1));
        const auto env = b.envelope(v, -1);
        QCOMPARE(env[0].min, int64_t(1));
        QCOMPARE(env[0].max, int64_t(5));
        QCOMPARE(env[0].maxEntry, int64_t(0));
        QCOMPARE(env[2].max, int64_t(9));  // entries 4 and 5
        QCOMPARE(env[2].maxEntry, int64_t(5));
        QCOMPARE(env[3].min, int64_t(0));
        QCOMPARE(env[4].firstValue, int64_t(8));
        QCOMPARE(env[4].lastValue, int64_t(4));
        // zoomed in: 3 columns over entry 4 alone, which holds across all of them
        const TimelineBinning z(EntryAxis::byIndex(10), 4.0, 5.0, 3);
        for (const auto& c : z.columns()) {
            QCOMPARE(c.first, int64_t(4));
            QCOMPARE(c.last, int64_t(4));
        }
        // columns past the end are not drawn
        const TimelineBinning past(EntryAxis::byIndex(10), 5, 15, 10);
        QVERIFY(past.columns()[4].valid);
        QVERIFY(!past.columns()[5].valid);
    }

    void matchesBruteForce_data() {
        QTest::addColumn<bool>("time");
        QTest::addColumn<int>("entries");
        QTest::addColumn<int>("width");
        QTest::addColumn<double>("fromFraction");
        QTest::addColumn<double>("toFraction");
        QTest::addColumn<uint>("seed");
        QTest::newRow("index, full, fewer entries than columns") << false << 37 << 200 << 0.0 << 1.0 << 1u;
        QTest::newRow("index, full, many entries per column") << false << 5000 << 173 << 0.0 << 1.0 << 2u;
        QTest::newRow("index, zoomed to a tenth") << false << 5000 << 300 << 0.45 << 0.55 << 3u;
        QTest::newRow("index, zoomed below one entry per column") << false << 5000 << 400 << 0.5 << 0.5005 << 4u;
        QTest::newRow("index, range beyond both ends") << false << 800 << 211 << -0.2 << 1.3 << 5u;
        QTest::newRow("time, full") << true << 3000 << 250 << 0.0 << 1.0 << 6u;
        QTest::newRow("time, zoomed, repeated times") << true << 3000 << 320 << 0.3 << 0.31 << 7u;
        QTest::newRow("time, one entry") << true << 1 << 50 << 0.0 << 1.0 << 8u;
        QTest::newRow("index, one column") << false << 999 << 1 << 0.0 << 1.0 << 9u;
    }

    void matchesBruteForce() {
        QFETCH(bool, time);
        QFETCH(int, entries);
        QFETCH(int, width);
        QFETCH(double, fromFraction);
        QFETCH(double, toFraction);
        QFETCH(uint, seed);
        std::mt19937_64 rng(seed);
        std::vector<int64_t> series(static_cast<size_t>(entries)), times(static_cast<size_t>(entries));
        int64_t t = 1'730'000'000'000'000;
        for (int i = 0; i < entries; ++i) {
            series[static_cast<size_t>(i)] = static_cast<int64_t>(rng() % 1'000'000) - 1000;
            t += static_cast<int64_t>(rng() % 4 == 0 ? 0 : rng() % 50);  // a quarter repeat the time before
            times[static_cast<size_t>(i)] = t;
        }
        const int64_t before = 123456;
        const auto timeColumn = memlens::model::TimeColumn::of(times);
        const EntryAxis axis = time ? EntryAxis::byTime(timeColumn) : EntryAxis::byIndex(entries);
        std::vector<double> xs;
        for (int i = 0; i < entries; ++i) xs.push_back(axis.x(i));
        const double span = axis.endX() - axis.startX();
        const double x0 = axis.startX() + span * fromFraction, x1 = axis.startX() + span * toFraction;
        const TimelineBinning b(axis, x0, x1, width);
        const auto env = b.envelope(series, before);
        const SeriesPyramid pyramid(series);
        const auto fast = b.envelope(series, before, &pyramid);  // block summaries: the same result
        QCOMPARE(b.width(), width);
        int checked = 0;
        for (int c = 0; c < width; ++c) {
            const double cs = b.columnStart(c), ce = b.columnStart(c + 1);
            const auto& col = b.columns()[static_cast<size_t>(c)];
            QCOMPARE(col.valid, ce > axis.startX() && cs < axis.endX());
            if (!col.valid) continue;
            const Brute expect = bruteForce(xs, axis.endX(), series, before, cs, ce);
            QCOMPARE(col.first, expect.first);
            QCOMPARE(col.last, expect.last);
            QCOMPARE(env[static_cast<size_t>(c)].min, expect.min);
            QCOMPARE(env[static_cast<size_t>(c)].max, expect.max);
            const int64_t me = env[static_cast<size_t>(c)].maxEntry;
            QCOMPARE(me < 0 ? before : series[static_cast<size_t>(me)], expect.max);
            const auto& f = fast[static_cast<size_t>(c)];
            QCOMPARE(f.min, expect.min);
            QCOMPARE(f.max, expect.max);
            QCOMPARE(f.maxEntry, me);
            QCOMPARE(f.firstValue, env[static_cast<size_t>(c)].firstValue);
            QCOMPARE(f.lastValue, env[static_cast<size_t>(c)].lastValue);
            ++checked;
        }
        QVERIFY(checked > 0);
    }

    void pyramidMatchesAScan() {
        std::mt19937_64 rng(11);
        std::vector<int64_t> v(1000);
        for (auto& x : v) x = static_cast<int64_t>(rng() % 50);  // many ties: the first max must win
        const SeriesPyramid p(v);
        QCOMPARE(p.size(), int64_t(1000));
        for (int k = 0; k < 2000; ++k) {
            int64_t a = static_cast<int64_t>(rng() % 1000), b = static_cast<int64_t>(rng() % 1000);
            if (a > b) std::swap(a, b);
            const RangeExtremes r = p.reduce(v, a, b);
            const auto maxIt = std::max_element(v.begin() + a, v.begin() + b + 1);
            QCOMPARE(r.min, *std::min_element(v.begin() + a, v.begin() + b + 1));
            QCOMPARE(r.max, *maxIt);
            QCOMPARE(r.maxIndex, static_cast<int64_t>(maxIt - v.begin()));
        }
        QVERIFY(SeriesPyramid().empty());
    }

    // Long enough for three levels of summaries (64, 4,096 and 262,144 values a block): ranges
    // from a few values to the whole series, ending anywhere, against a plain scan.
    void pyramidOfThreeLevelsMatchesAScan() {
        std::mt19937_64 rng(12);
        const int64_t n = 64 * 64 * 64 * 2 + 4097;
        std::vector<int64_t> v(static_cast<size_t>(n));
        for (auto& x : v) x = static_cast<int64_t>(rng() % 1000);  // ties: the first max must win
        v[static_cast<size_t>(n) - 5] = 5000;  // the max in the last partial block of every level
        v[300'000] = -7;                        // the min inside a whole top-level block
        const SeriesPyramid p(v);
        auto check = [&](int64_t a, int64_t b) {
            const RangeExtremes r = p.reduce(v, a, b);
            const auto maxIt = std::max_element(v.begin() + a, v.begin() + b + 1);
            QCOMPARE(r.min, *std::min_element(v.begin() + a, v.begin() + b + 1));
            QCOMPARE(r.max, *maxIt);
            QCOMPARE(r.maxIndex, static_cast<int64_t>(maxIt - v.begin()));
        };
        check(0, n - 1);
        check(1, n - 2);
        check(262'143, 262'144 * 2);
        check(4095, 4096);
        for (int k = 0; k < 300; ++k) {
            const int64_t len = static_cast<int64_t>(rng() % static_cast<uint64_t>(k % 3 == 0 ? n : 10'000));
            const int64_t a = static_cast<int64_t>(rng() % static_cast<uint64_t>(n - len));
            check(a, a + len);
        }
    }

    void columnAt() {
        const TimelineBinning b(EntryAxis::byIndex(100), 0, 100, 10);
        QCOMPARE(b.columnAt(0), 0);
        QCOMPARE(b.columnAt(55), 5);
        QCOMPARE(b.columnAt(99.9), 9);
        QCOMPARE(b.columnAt(-3), 0);
        QCOMPARE(b.columnAt(1000), 9);
        QCOMPARE(TimelineBinning().columnAt(1), -1);
    }

    void emptyInputs() {
        QCOMPARE(TimelineBinning(EntryAxis::byIndex(10), 5, 5, 100).width(), 0);
        QCOMPARE(TimelineBinning(EntryAxis::byIndex(10), 0, 10, 0).width(), 0);
        const TimelineBinning none(EntryAxis::byIndex(0), 0, 1, 8);
        for (const auto& c : none.columns()) QVERIFY(!c.valid);
    }
};

MEMLENS_CORE_TEST_MAIN(TestTimelineBinning)
#include "tst_timelinebinning.moc"
