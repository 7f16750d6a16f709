// Byte counts for people and back; the binary tick steps of the timeline's y axis and the labels
// of its x axis.
#include "QtTestMain.h"

#include "timeline/ByteAxisTicker.h"
#include "common/ByteText.h"
#include "timeline/EntryAxisTicker.h"

#include <QtTest>

using namespace memlens::views;

class TestByteFormat : public QObject {
    Q_OBJECT

private slots:
    void format() {
        QCOMPARE(formatBytes(0), QStringLiteral("0 B"));
        QCOMPARE(formatBytes(512), QStringLiteral("512 B"));
        QCOMPARE(formatBytes(1536), QStringLiteral("1.5 KiB"));
        QCOMPARE(formatBytes(24.0 * 1024 * 1024), QStringLiteral("24 MiB"));
        QCOMPARE(formatBytes(-3.0 * 1024 * 1024), QStringLiteral("-3 MiB"));
        QCOMPARE(formatBytesShort(0), QStringLiteral("0"));
        QCOMPARE(formatBytesShort(256.0 * 1024 * 1024), QStringLiteral("256 MiB"));
        QCOMPARE(formatBytesShort(1.25 * 1024 * 1024 * 1024), QStringLiteral("1.25 GiB"));
        QCOMPARE(formatBytesShort(768.0 * 1024), QStringLiteral("768 KiB"));
    }

    void parse_data() {
        QTest::addColumn<QString>("text");
        QTest::addColumn<qulonglong>("bytes");
        QTest::addColumn<bool>("ok");
        QTest::newRow("plain") << "1024" << 1024ULL << true;
        QTest::newRow("k") << "512k" << 524288ULL << true;
        QTest::newRow("KiB") << "1.5 MiB" << 1572864ULL << true;
        QTest::newRow("GB reads as GiB") << "2 GB" << 2147483648ULL << true;
        QTest::newRow("g") << "2g" << 2147483648ULL << true;
        QTest::newRow("spaces") << "  3 kib " << 3072ULL << true;
        QTest::newRow("bytes") << "10 B" << 10ULL << true;
        QTest::newRow("empty") << "" << 0ULL << false;
        QTest::newRow("words") << "lots" << 0ULL << false;
        QTest::newRow("negative") << "-5" << 0ULL << false;
        QTest::newRow("unit only") << "MiB" << 0ULL << false;
        QTest::newRow("too big") << "99999999 PiB" << 0ULL << false;
    }

    void parse() {
        QFETCH(QString, text);
        QFETCH(qulonglong, bytes);
        QFETCH(bool, ok);
        const auto v = parseBytes(text);
        QCOMPARE(v.has_value(), ok);
        if (ok) QCOMPARE(static_cast<qulonglong>(*v), bytes);
    }

    void byteTicksArePowersOfTwo() {
        QCOMPARE(ByteAxisTicker::stepFor(1.5 * 1024 * 1024 * 1024, 6), 256.0 * 1024 * 1024);
        QCOMPARE(ByteAxisTicker::stepFor(10.0 * 1024 * 1024, 5), 2.0 * 1024 * 1024);
        QCOMPARE(ByteAxisTicker::stepFor(0.5, 5), 1.0);
        for (double range : {3e3, 7.7e6, 1.2e9, 9e12}) {
            const double step = ByteAxisTicker::stepFor(range, 6);
            QCOMPARE(std::exp2(std::round(std::log2(step))), step);
            QVERIFY(range / step >= 3 && range / step <= 12);
        }
    }

    void entryAndTimeLabels() {
        QCOMPARE(EntryAxisTicker::entryLabel(0), QStringLiteral("0"));
        QCOMPARE(EntryAxisTicker::entryLabel(5000), QStringLiteral("5000"));
        QCOMPARE(EntryAxisTicker::entryLabel(250000), QStringLiteral("250k"));
        QCOMPARE(EntryAxisTicker::entryLabel(1500000), QStringLiteral("1.5M"));
        QCOMPARE(EntryAxisTicker::timeLabel(0), QStringLiteral("0"));
        QCOMPARE(EntryAxisTicker::timeLabel(750), QStringLiteral("750 µs"));
        QCOMPARE(EntryAxisTicker::timeLabel(250000), QStringLiteral("250 ms"));
        QCOMPARE(EntryAxisTicker::timeLabel(1.5e6), QStringLiteral("1.5 s"));
        QCOMPARE(EntryAxisTicker::timeLabel(150e6), QStringLiteral("2 min 30 s"));
    }
};

MEMLENS_CORE_TEST_MAIN(TestByteFormat)
#include "tst_bytetext.moc"
