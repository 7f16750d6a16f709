// `memlens FILE --view NAME --screenshot OUT.png` for every view, on the bundled example and on
// every real fixture: exit 0 and a 1600x1000 picture that is not blank (many distinct colours);
// a broken or missing file: exit 1 and one line on stderr.
//   tst_screenshots example|fixtures|broken      (fixtures exits 77 when the snapshots are absent)
#include <QDir>
#include <QGuiApplication>
#include <QImage>
#include <QSet>
#include <QTemporaryDir>
#include <QtTest>

#include "SpawnedProcess.h"

#include <cstdio>

namespace {

const QStringList kViews = {QStringLiteral("timeline"), QStringLiteral("blocks"), QStringLiteral("events"),
                            QStringLiteral("stack"), QStringLiteral("breakdown"), QStringLiteral("sites"),
                            QStringLiteral("whatif"), QStringLiteral("findings")};

QString snapshotsDir() { return QStringLiteral(MEMLENS_SNAPSHOTS_DIR); }

QStringList realFixtures() {
    QStringList out;
    const QFileInfoList files = QDir(snapshotsDir()).entryInfoList({QStringLiteral("*.pickle"), QStringLiteral("*.pkl")},
                                                                    QDir::Files, QDir::Name);
    for (const QFileInfo& f : files) out << f.absoluteFilePath();
    return out;
}

struct Run {
    int exitCode = -1;
    QString stderrText;
};

Run runMemlens(const QStringList& args) {
    // posix_spawn, not QProcess: the tsan preset runs this test, and its fork handler aborts
    QTemporaryDir dir;
    const QString errPath = dir.filePath(QStringLiteral("stderr.txt"));
    SpawnedProcess p;
    p.setStandardErrorFile(errPath);
    Run r;
    if (!p.start(QStringLiteral(MEMLENS_BIN), args)) {
        r.stderrText = QStringLiteral("could not start ") + QStringLiteral(MEMLENS_BIN);
        return r;
    }
    if (!p.waitForFinished(120000)) {
        p.kill();
        r.stderrText = QStringLiteral("timed out");
        return r;
    }
    r.exitCode = p.normalExit() ? p.exitCode() : -1;
    QFile err(errPath);
    if (err.open(QIODevice::ReadOnly)) r.stderrText = QString::fromUtf8(err.readAll());
    return r;
}

int distinctColours(const QImage& image) {
    QSet<QRgb> colours;
    for (int y = 0; y < image.height(); y += 2) {
        const auto* line = reinterpret_cast<const QRgb*>(image.constScanLine(y));
        for (int x = 0; x < image.width(); x += 2) colours.insert(line[x]);
    }
    return static_cast<int>(colours.size());
}

} // namespace

class TestScreenshots : public QObject {
    Q_OBJECT

    QTemporaryDir m_out;

    void shoot(const QString& file, const QString& view) {
        const QString png = m_out.filePath(QFileInfo(file).completeBaseName() + QLatin1Char('-') + view + QStringLiteral(".png"));
        const Run r = runMemlens({file, QStringLiteral("--view"), view, QStringLiteral("--screenshot"), png});
        QVERIFY2(r.exitCode == 0, qPrintable(QStringLiteral("exit %1: %2").arg(r.exitCode).arg(r.stderrText)));
        QImage image(png);
        QVERIFY2(!image.isNull(), qPrintable(png));
        QCOMPARE(image.size(), QSize(1600, 1000));
        image = image.convertToFormat(QImage::Format_RGB32);
        const int colours = distinctColours(image);
        QVERIFY2(colours >= 64, qPrintable(QStringLiteral("%1: only %2 colours").arg(png).arg(colours)));
    }

    void addRows(const QStringList& files) {
        QTest::addColumn<QString>("file");
        QTest::addColumn<QString>("view");
        for (const QString& f : files)
            for (const QString& v : kViews)
                QTest::newRow(qPrintable(QFileInfo(f).fileName() + QLatin1Char(' ') + v)) << f << v;
    }

private slots:
    void example_data() { addRows({QStringLiteral(MEMLENS_SOURCE_DIR "/resources/example.pickle")}); }
    void example() {
        QFETCH(QString, file);
        QFETCH(QString, view);
        shoot(file, view);
    }

    void fixtures_data() { addRows(realFixtures()); }
    void fixtures() {
        QFETCH(QString, file);
        QFETCH(QString, view);
        shoot(file, view);
    }

    void broken_data() {
        QTest::addColumn<QString>("file");
        QTest::addColumn<QString>("expected");  // in the one line
        const QString garbage = m_out.filePath(QStringLiteral("garbage.pickle"));
        QFile f(garbage);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("this is not a pickle\n");
        f.close();
        QTest::newRow("garbage") << garbage << garbage;
        QTest::newRow("missing") << m_out.filePath(QStringLiteral("missing.pickle")) << QStringLiteral("missing.pickle");
        const QString empty = m_out.filePath(QStringLiteral("empty.pickle"));
        QFile e(empty);
        QVERIFY(e.open(QIODevice::WriteOnly));
        e.close();
        QTest::newRow("empty") << empty << QStringLiteral("empty file");
        const QString notSnapshot = QDir(snapshotsDir()).filePath(QStringLiteral("invalid/peopleofdata__mygpt__memory.pickle"));
        if (QFileInfo::exists(notSnapshot))
            QTest::newRow("not a snapshot") << notSnapshot << QStringLiteral("not a PyTorch memory snapshot");
    }
    void broken() {
        QFETCH(QString, file);
        QFETCH(QString, expected);
        const Run r = runMemlens({file, QStringLiteral("--view"), QStringLiteral("timeline"), QStringLiteral("--screenshot"),
                                  m_out.filePath(QStringLiteral("never.png"))});
        QCOMPARE(r.exitCode, 1);
        QVERIFY2(r.stderrText.endsWith(QLatin1Char('\n')), qPrintable(r.stderrText));
        QCOMPARE(r.stderrText.count(QLatin1Char('\n')), 1);
        QVERIFY2(r.stderrText.contains(expected), qPrintable(r.stderrText));
        QVERIFY(!QFileInfo::exists(m_out.filePath(QStringLiteral("never.png"))));
    }

    void usageErrors() {
        QCOMPARE(runMemlens({QStringLiteral("--view"), QStringLiteral("nonsense")}).exitCode, 2);
    }
};

int main(int argc, char** argv) {
    // the one argument picks the part: example, fixtures (with usage errors) or broken
    const QString part = argc > 1 ? QString::fromLocal8Bit(argv[1]) : QString();
    if (part == QLatin1String("fixtures") && realFixtures().isEmpty()) {
        std::printf("skipped: no real snapshots in %s\n", MEMLENS_SNAPSHOTS_DIR);
        return 77;
    }
    QGuiApplication app(argc, argv);
    TestScreenshots test;
    QStringList args = {QString::fromLocal8Bit(argv[0])};
    if (part == QLatin1String("example")) args << QStringLiteral("example") << QStringLiteral("usageErrors");
    else if (part == QLatin1String("fixtures")) args << QStringLiteral("fixtures");
    else if (part == QLatin1String("broken")) args << QStringLiteral("broken");
    return QTest::qExec(&test, args);
}

#include "tst_screenshots.moc"
