// TimelineView as a user drives it: it draws one column per pixel; hovering names the allocation
// under the mouse; a click makes the entry current and selects the allocation; a drag selects a
// range; wheel zooms; the x axis switches to time; the number of bands follows the spin box.
#include "DocumentFixture.h"
#include "QtTestMain.h"

#include "core/TimelineBands.h"
#include "timeline/TimelineOverlayItem.h"
#include "timeline/TimelineView.h"
#include "timeline/QCustomPlotInclude.h"

#include <QSignalSpy>
#include <QApplication>
#include <QtTest>

using namespace memlens::views;
using namespace tracetest;

class TestTimelineView : public QObject {
    Q_OBJECT

    std::unique_ptr<SnapshotDocument> m_doc;
    std::unique_ptr<TimelineView> m_view;

    // A point on the plot over entry e, `bytes` high.
    QPoint at(double entry, double bytes) const {
        QCustomPlot* p = m_view->plot();
        return QPoint(static_cast<int>(p->xAxis->coordToPixel(entry)), static_cast<int>(p->yAxis->coordToPixel(bytes)));
    }

private slots:
    void init() {
        m_doc = document(smallTrace());
        m_view = std::make_unique<TimelineView>();
        m_view->resize(900, 420);
        m_view->setDocument(m_doc.get());
        m_view->show();
        QVERIFY(QTest::qWaitForWindowExposed(m_view.get()));
        m_view->redraw();
    }
    void cleanup() {
        m_view.reset();
        m_doc.reset();
    }

    void drawsOneColumnPerPixel() {
        const int plotWidth = m_view->plot()->axisRect()->rect().width();
        QCOMPARE(m_view->layout().width(), plotWidth);
        QCOMPARE(m_view->xRange(), std::make_pair(0.0, 12.0));
        QVERIFY(m_view->layout().maxBytes() > 0);
        // reserved fill and line, live, nvidia-smi's samples (none: not a session), and a what-if
        // simulation's reserved and live (none: nothing simulated)
        QCOMPARE(m_view->plot()->graphCount(), 6);
        QCOMPARE(m_view->plot()->graph(3)->dataCount(), 0);
        QCOMPARE(m_view->plot()->graph(4)->dataCount(), 0);
        QCOMPARE(m_view->plot()->graph(5)->dataCount(), 0);
        QVERIFY(m_view->processSamples().empty());
        QVERIFY(m_view->plot()->graph(0)->dataCount() <= 2 * plotWidth);
    }

    // The small trace's allocations come from `linear` under model.py: no role a category names,
    // so by category every band is "other", drawn grey (the call-site palette has no grey).
    void coloursByCategory() {
        auto greys = [this] {
            const QImage img = m_view->plot()->toPixmap(800, 360).toImage();
            int n = 0;
            for (int y = 0; y < img.height(); ++y)
                for (int x = 0; x < img.width(); ++x) {
                    const QRgb c = img.pixel(x, y);
                    if (qRed(c) == qGreen(c) && qGreen(c) == qBlue(c) && qRed(c) >= 0x80 && qRed(c) <= 0xa0) ++n;
                }
            return n;
        };
        const int before = greys();
        m_view->setColourByCategory(true);
        m_view->redraw();
        QVERIFY(m_view->coloursByCategory());
        QVERIFY(m_view->legendText().contains(QStringLiteral("parameters")));
        QVERIFY(m_view->legendText().contains(QStringLiteral("saved for backward")));
        const int after = greys();
        QVERIFY2(after > before + 1000, qPrintable(QStringLiteral("%1 grey pixels before, %2 after").arg(before).arg(after)));
        m_view->setColourByCategory(false);
        m_view->redraw();
        QCOMPARE(greys(), before);
    }

    void hoverAndClickSelectAnAllocation() {
        // at entry 3 the stack is E (128 KiB), A (1 MiB), B, C: 600 KiB high is inside A
        const QPoint p = at(3.5, 600.0 * KiB);
        const int64_t hit = m_view->lifetimeAt(p);
        QCOMPARE(hit, int64_t(1));
        const QString text = m_view->describeAt(p);
        QVERIFY2(text.contains(QStringLiteral("1 MiB")), qPrintable(text));
        QVERIFY2(text.contains(QStringLiteral("weights (model.py:40)")), qPrintable(text));
        QVERIFY2(text.contains(QStringLiteral("still live at the end")), qPrintable(text));
        QSignalSpy selected(m_doc.get(), &SnapshotDocument::allocationSelected);
        QTest::mouseClick(m_view->plot(), Qt::LeftButton, {}, p);
        QCOMPARE(m_doc->currentEvent(), int64_t(3));
        QCOMPARE(selected.count(), 1);
        QCOMPARE(m_doc->selectedStack(), m_doc->deviceData().trace.stack[1]);
        QVERIFY(m_doc->selectedDescription().contains(QStringLiteral("0x7f0000000000")));
        // the band at the bottom: E, allocated before recording
        const QString bottom = m_view->describeAt(at(3.5, 64.0 * KiB));
        QVERIFY2(bottom.contains(QStringLiteral("allocated before recording")), qPrintable(bottom));
        // above everything: only the entry line
        QVERIFY(m_view->describeAt(at(3.5, 6.0 * MiB)).startsWith(QStringLiteral("<span")));
    }

    void dragSelectsARange() {
        QSignalSpy spy(m_doc.get(), &SnapshotDocument::selectionChanged);
        QTest::mousePress(m_view->plot(), Qt::LeftButton, {}, at(2.5, 1.0 * MiB));
        QTest::mouseMove(m_view->plot(), at(5.5, 1.0 * MiB));
        QTest::mouseMove(m_view->plot(), at(8.5, 1.0 * MiB));
        QTest::mouseRelease(m_view->plot(), Qt::LeftButton, {}, at(8.5, 1.0 * MiB));
        QCOMPARE(spy.count(), 1);
        QCOMPARE(m_doc->selection(), std::make_optional(std::make_pair<int64_t, int64_t>(2, 8)));
        QCOMPARE(m_doc->currentEvent(), int64_t(11));  // a drag is not a click
        m_view->zoomToSelection();
        const auto [x0, x1] = m_view->xRange();
        QVERIFY(x0 >= 1.5 && x0 <= 2.0);  // the selection, a little margin, at least the smallest span (8)
        QVERIFY(x1 >= 9.0 && x1 <= 9.5);
        m_doc->back();
        QVERIFY(!m_doc->selection());
    }

    void wheelZoomsAroundTheMouseAndRangesClamp() {
        const QPoint p = at(6.0, 1.0 * MiB);
        QWheelEvent wheel(p, m_view->plot()->mapToGlobal(p), {}, QPoint(0, 240), Qt::NoButton, Qt::NoModifier,
                          Qt::NoScrollPhase, false);
        QCoreApplication::sendEvent(m_view->plot(), &wheel);
        const auto [x0, x1] = m_view->xRange();
        QVERIFY(x1 - x0 < 12.0);
        QVERIFY(x0 < 6.0 && x1 > 6.0);
        m_view->setXRange(-100, 5);
        QCOMPARE(m_view->xRange().first, 0.0);
        m_view->setXRange(3, 3.001);  // below the smallest span
        QVERIFY(m_view->xRange().second - m_view->xRange().first >= 8.0);
        m_view->fit();
        QCOMPARE(m_view->xRange(), std::make_pair(0.0, 12.0));
    }

    void timeAxis() {
        QVERIFY(m_view->timeAxisAvailable());
        m_view->setTimeAxis(true);
        QVERIFY(m_view->timeAxis());
        m_view->redraw();
        QCOMPARE(m_view->xRange(), std::make_pair(0.0, 111.0));  // 100 .. 210 µs, plus the last entry's µs
        QTest::mouseClick(m_view->plot(), Qt::LeftButton, {}, at(75.0, 6.0 * MiB));  // 175 µs: entry 7
        QCOMPARE(m_doc->currentEvent(), int64_t(7));
        m_view->setTimeAxis(false);
        QCOMPARE(m_view->xRange(), std::make_pair(0.0, 12.0));
    }

    void largestCount() {
        m_view->setLargestCount(1);  // only A has a band
        m_view->redraw();
        QCOMPARE(m_view->lifetimeAt(at(3.5, 600.0 * KiB)), TimelineBands::kOther);  // below A: E+B+C = 896 KiB
        QCOMPARE(m_view->lifetimeAt(at(3.5, 1200.0 * KiB)), int64_t(1));
        QCOMPARE(m_view->largestCount(), 1);
    }

    void bandsFollowTheVisibleRange() {
        // the whole trace (entries 0..12): A 1 MiB x 11 entries and D 768 KiB x 5 cover the most
        m_view->setLargestCount(2);
        QCOMPARE(m_view->bandedLifetimes(), (std::vector<uint32_t>{1, 4}));
        // entries 0..8: A 1 MiB x 7, then B 512 KiB x 3 (C: 256 KiB x 5, E: 128 KiB x 8, D: 768 KiB x 1)
        m_view->setXRange(0, 8);
        QTRY_COMPARE(m_view->bandedLifetimes(), (std::vector<uint32_t>{1, 2}));
        m_view->redraw();
        // at entry 3.5: the grey band (E + C, 384 KiB), A's band to 1408 KiB, B's above it
        QCOMPARE(m_view->lifetimeAt(at(3.5, 1600.0 * KiB)), int64_t(2));
        m_view->fit();
        QTRY_COMPARE(m_view->bandedLifetimes(), (std::vector<uint32_t>{1, 4}));
        m_view->redraw();  // B is in the grey band again (E + B + C = 896 KiB), under A's band
        QCOMPARE(m_view->lifetimeAt(at(3.5, 1600.0 * KiB)), int64_t(1));
    }

    // A document whose allocations are paired after it arrives (the window's): the curves first,
    // the bands once lifetimesReady comes.
    void bandsFollowTheLifetimes() {
        auto loaded = LoadedSnapshot::fromSnapshot(synth::read(picklize(smallTrace())), "trace.pickle", {},
                                                   StateHistories::Later);
        SnapshotDocument doc(loaded);
        QSignalSpy ready(&doc, &SnapshotDocument::lifetimesReady);
        TimelineView view;
        view.resize(900, 420);
        view.setLargestCount(2);
        view.setDocument(&doc);
        view.show();
        QVERIFY(QTest::qWaitForWindowExposed(&view));
        if (ready.isEmpty()) {
            QVERIFY(doc.isPairing());
            QVERIFY(view.bandedLifetimes().empty());
            QVERIFY(ready.wait(60000));
        }
        // the whole trace: A 1 MiB x 11 entries and D 768 KiB x 5 cover the most
        QCOMPARE(view.bandedLifetimes(), (std::vector<uint32_t>{1, 4}));
    }

    void currentEventComesIntoView() {
        m_doc->setCurrentEvent(0);
        m_view->setXRange(0, 8);
        m_doc->setCurrentEvent(11);
        const auto [x0, x1] = m_view->xRange();
        QVERIFY(x0 <= 11 && x1 >= 11);
    }

    void withoutDocumentOrTrace() {
        m_view->setDocument(nullptr);
        m_view->redraw();
        QCOMPARE(m_view->layout().width(), 0);
        QVERIFY(m_view->describeAt(QPoint(100, 100)).isEmpty());
        auto empty = document({});
        m_view->setDocument(empty.get());
        m_view->redraw();
        QCOMPARE(m_view->layout().width(), 0);
        QTest::mouseClick(m_view->plot(), Qt::LeftButton, {}, QPoint(200, 200));  // nothing happens
        m_view->setDocument(nullptr);
    }

    void documentDestroyedUnderTheView() {
        m_doc.reset();
        m_view->redraw();
        QCOMPARE(m_view->layout().width(), 0);
    }

    // an overflowed ring buffer is said above the plot; each private pool gets its own reserved
    // line (the MemPool's grows at entry 2, the graph pool's is there throughout)
    // Many equal allocations from one call site, none drawn alone: summed into one band of
    // their stack, which hover names and a click selects.
    void manyAllocationsFromOneCallSiteMakeOneBand() {
        std::vector<Entry> t;
        const auto slot64 = [](int k) { return kBase + static_cast<uint64_t>(k) * 64 * KiB; };
        for (int k = 0; k < 40; ++k) t.push_back({"alloc", slot64(k), 64 * KiB, -1, "embed"});
        for (int r = 0; r < 100; ++r) {
            t.push_back({"alloc", slot64(40 + r % 20), 32 * KiB, -1, "attn"});
            t.push_back({"free_completed", slot64(40 + r % 20), 32 * KiB, -1, "attn"});
        }
        auto doc = document(t);
        TimelineView v;
        v.resize(900, 420);
        v.setLargestCount(2);  // two of embed's 40 drawn alone: the rest is grey without groups
        v.setDocument(doc.get());
        v.show();
        QVERIFY(QTest::qWaitForWindowExposed(&v));
        v.redraw();
        QCOMPARE(v.stackGroups().groupCount(), size_t(1));
        QVERIFY2(v.legendText().contains(QStringLiteral("many allocations of one call site")), qPrintable(v.legendText()));
        QCOMPARE(v.layout().bands().groupCount(), size_t(1));
        // at entry 200, 38 of embed's allocations (2.375 MiB) are summed at the bottom
        const int col = v.layout().binning().columnAt(200.0);
        QCOMPARE(v.layout().bands().groupBytes(col, 0), int64_t(38 * 64 * KiB));
        QCustomPlot* p = v.plot();
        const QPoint bottom(static_cast<int>(p->xAxis->coordToPixel(200.0)), static_cast<int>(p->yAxis->coordToPixel(1.0 * MiB)));
        QCOMPARE(v.lifetimeAt(bottom), TimelineBands::groupHit(0));
        const QString text = v.describeAt(bottom);
        QVERIFY2(text.contains(QStringLiteral("38 allocations from one call site")), qPrintable(text));
        QVERIFY2(text.contains(QStringLiteral("embed (model.py:40)")), qPrintable(text));
        QTest::mouseClick(p, Qt::LeftButton, {}, bottom);
        QCOMPARE(doc->selectedStack(), doc->deviceData().trace.stack[0]);  // embed's first alloc
    }

    void truncatedTraceAndPrivatePools() {
        auto doc = viewtest::newerDocument();
        TimelineView v;
        v.resize(900, 420);
        v.setDocument(doc.get());
        v.show();
        QVERIFY(QTest::qWaitForWindowExposed(&v));
        v.redraw();
        QVERIFY2(v.noticeText().contains(QStringLiteral("The trace starts mid-run: its ring buffer of 9 entries overflowed")),
                 qPrintable(v.noticeText()));
        // the free at entries 7-8 and C's live block: two allocations whose alloc was dropped
        QVERIFY2(v.noticeText().contains(QStringLiteral("At least 2 allocations were made in the dropped part")),
                 qPrintable(v.noticeText()));
        QCOMPARE(v.poolLineCount(), 2);
        QCOMPARE(v.plot()->graphCount(), 8);
        QCustomPlot* p = v.plot();
        QCPGraph* memPool = p->graph(6);
        QCOMPARE(memPool->name(), QStringLiteral("private pool (0, 1)"));
        double lo = 1e30, hi = 0;
        for (auto it = memPool->data()->constBegin(); it != memPool->data()->constEnd(); ++it) {
            lo = std::min(lo, it->value);
            hi = std::max(hi, it->value);
        }
        QCOMPARE(lo, 0.0);
        QCOMPARE(hi, 20.0 * 1024 * 1024);
        QVERIFY2(v.legendText().contains(QStringLiteral("private pool (1, 0) reserved")), qPrintable(v.legendText()));
        QVERIFY(v.legendText().contains(QStringLiteral("allocated before the trace")));
        // a complete trace says nothing
        auto plainDoc = document(smallTrace());
        v.setDocument(plainDoc.get());
        QVERIFY(v.noticeText().isEmpty());
        QCOMPARE(v.poolLineCount(), 0);
        // the pinned host memory is a device like the others
        v.setDocument(doc.get());
        doc->setDevice(memlens::model::kHostDevice);
        v.redraw();
        QCOMPARE(v.layout().maxBytes(), int64_t(12288));
        QVERIFY(v.noticeText().isEmpty());
    }


    // The marks over the plot on a trace with more of them than pixels: snapshot entries closer
    // than a few pixels are one shaded span (no column of it left out), and an annotation range
    // that begins before the shown range is still drawn across it, and nothing where no range is.
    void denseMarksAndRangesBeyondTheView() {
        std::vector<Entry> entries{{"segment_alloc", kBase, kSegment, 1000}};
        const int n = 2000;
        for (int i = 1; i < n; ++i) {
            const int64_t t = 1000 + 10 * i;
            if (i >= 200 && i < 800 && i % 3 == 0) entries.push_back({"snapshot", 0, 0, t});
            else if (i % 2) entries.push_back({"alloc", slot(0), 64 * KiB, t, "weights"});
            else entries.push_back({"free_completed", slot(0), 64 * KiB, t, "weights"});
        }
        // one range over entries 100 to 1900, lane 0
        const auto timeOf = [](int i) { return int64_t(1000 + 10 * i); };
        auto doc = document(entries, {{"START", "epoch", timeOf(100)}, {"END", "epoch", timeOf(1900)}});
        TimelineView view;
        view.resize(900, 420);
        view.setDocument(doc.get());
        view.show();
        QVERIFY(QTest::qWaitForWindowExposed(&view));
        QCustomPlot* plot = view.plot();
        const auto image = [&] {
            view.redraw();
            return plot->toPixmap(plot->width(), plot->height()).toImage();
        };
        const int midY = (plot->axisRect()->rect().top() + plot->axisRect()->rect().bottom()) / 2;
        const auto blueness = [](QRgb c) { return qBlue(c) - qRed(c); };

        view.fit();
        QImage img = image();
        const int from = static_cast<int>(plot->xAxis->coordToPixel(201)) + 1;
        const int to = static_cast<int>(plot->xAxis->coordToPixel(798)) - 1;
        QVERIFY(to - from > 100);  // 200 snapshot entries on fewer pixels
        const int outside = blueness(img.pixel(static_cast<int>(plot->xAxis->coordToPixel(1400)), midY));
        for (int x = from; x <= to; ++x)
            QVERIFY2(blueness(img.pixel(x, midY)) > outside + 10,
                     qPrintable(QStringLiteral("column %1 (%2 to %3) is not shaded").arg(x).arg(from).arg(to)));

        // the lane above the plot, in the middle of the shown range
        const int laneY = plot->axisRect()->rect().top() - TimelineOverlayItem::kLaneHeight / 2 - 1;
        const int midX = (plot->axisRect()->rect().left() + plot->axisRect()->rect().right()) / 2;
        view.setXRange(1930, 1990);  // after the range: nothing in the lane
        const QRgb empty = image().pixel(midX, laneY);
        view.setXRange(900, 1100);  // inside it, far from where it begins
        const QRgb inside = image().pixel(midX, laneY);
        QVERIFY2(inside != empty, qPrintable(QStringLiteral("lane pixel %1 inside the range, %2 outside")
                                                .arg(inside, 8, 16).arg(empty, 8, 16)));
    }
};

MEMLENS_GUI_TEST_MAIN(TestTimelineView)
#include "tst_timelineview.moc"
