// JobTracker: the one way background work runs for the views and loaders. Only the newest job's
// outcome is delivered (exactly one of done, failed, cancelled), only while its context lives;
// every exception becomes the one-line error; results nobody wants are freed off the GUI thread.
// No sleeps: the tests wait for the tracker to be idle.
#include "QtTestMain.h"
#include "document/JobTracker.h"

#include "memlens/model/ParseError.h"
#include "memlens/model/SessionData.h"

#include <QThreadPool>
#include <QtTest>

#ifdef __linux__
#include <cerrno>
#include <cmath>
#include <chrono>
#include <sys/resource.h>
#include <unistd.h>
#endif

#include <atomic>
#include <memory>
#include <mutex>
#include <new>
#include <semaphore>
#include <thread>

using namespace memlens::views;
namespace model = memlens::model;

namespace {

// A result that records the thread it was destroyed on.
struct Freed {
    std::mutex mutex;
    std::vector<std::thread::id> threads;
    void record() {
        const std::lock_guard<std::mutex> lock(mutex);
        threads.push_back(std::this_thread::get_id());
    }
    size_t count() {
        const std::lock_guard<std::mutex> lock(mutex);
        return threads.size();
    }
};

struct Big {
    explicit Big(std::shared_ptr<Freed> f, int v = 0) : freed(std::move(f)), value(v) {}
    ~Big() { freed->record(); }
    std::shared_ptr<Freed> freed;
    int value;
};
using BigPtr = std::shared_ptr<const Big>;

// Counts what a tracker delivered.
struct Outcomes {
    int done = 0, failed = 0, cancelled = 0;
    quint64 lastGeneration = 0;
    QString message;
    int value = -1;
    template <typename R>
    JobHandlers<R> handlers() {
        JobHandlers<R> h;
        h.done = [this](quint64 g, R r) {
            ++done;
            lastGeneration = g;
            if constexpr (std::is_same_v<R, int>) value = r;
            else if constexpr (std::is_same_v<R, BigPtr>) value = r->value;
        };
        h.failed = [this](quint64 g, const QString& m) {
            ++failed;
            lastGeneration = g;
            message = m;
        };
        h.cancelled = [this](quint64 g) {
            ++cancelled;
            lastGeneration = g;
        };
        return h;
    }
};

// A gate a job waits at until the test opens it (so the test controls when work ends).
struct Gate {
    std::binary_semaphore open{0};
};

} // namespace

class TestJobTracker : public QObject {
    Q_OBJECT

private slots:
    void deliversTheResult() {
        QObject context;
        JobTracker jobs(&context);
        Outcomes o;
        const quint64 g = jobs.start<int>([](const JobControl&) { return 42; }, o.handlers<int>());
        QVERIFY(g != 0);
        QVERIFY(jobs.isRunning());
        QCOMPARE(jobs.runningGeneration(), g);
        QCOMPARE(o.done, 0);  // never synchronously
        QVERIFY(jobs.waitForIdle());
        QVERIFY(!jobs.isRunning());
        QCOMPARE(o.done, 1);
        QCOMPARE(o.value, 42);
        QCOMPARE(o.lastGeneration, g);
        QCOMPARE(o.failed + o.cancelled, 0);
    }

    void backgroundJobsRunOnTheirOwnPoolAtALowerPriority() {
#ifdef __linux__
        // the nice value of the calling thread, as the kernel has it
        auto niceOfThisThread = [] {
            errno = 0;
            return ::getpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()));
        };
        const int base = niceOfThisThread();
        QObject context;
        JobTracker normal(&context), background(&context, JobPriority::Background);
        auto probe = [&](const JobControl&) { return niceOfThisThread(); };
        int normalNice = -100, backgroundNice = -100;
        JobHandlers<int> hn, hb;
        hn.done = [&](quint64, int v) { normalNice = v; };
        hb.done = [&](quint64, int v) { backgroundNice = v; };
        normal.start<int>(probe, hn);
        background.start<int>(probe, hb);
        QVERIFY(normal.waitForIdle());
        QVERIFY(background.waitForIdle());
        QCOMPARE(normalNice, base);
        QCOMPARE(backgroundNice, std::min(base + 10, 19));
        QVERIFY(JobTracker::backgroundPool() != JobTracker::pool());
        QCOMPARE(JobTracker::backgroundPool()->objectName(), QStringLiteral("memlens analyses"));
#else
        QSKIP("thread priorities are set on Linux only");
#endif
    }

    void aNewerGenerationDropsTheStaleResult() {
        QObject context;
        JobTracker jobs(&context);
        Outcomes o;
        auto gate = std::make_shared<Gate>();
        const quint64 g1 = jobs.start<int>(
            [gate](const JobControl&) {
                gate->open.acquire();
                return 1;  // finishes after being superseded, without looking at its flag
            },
            o.handlers<int>());
        const quint64 g2 = jobs.start<int>([](const JobControl&) { return 2; }, o.handlers<int>());
        QVERIFY(g2 > g1);
        QCOMPARE(jobs.generation(), g2);
        QCOMPARE(o.cancelled, 1);  // the superseded one, at once
        QCOMPARE(o.lastGeneration, g1);
        gate->open.release();
        QVERIFY(jobs.waitForIdle());
        QCOMPARE(o.done, 1);
        QCOMPARE(o.value, 2);
        QCOMPARE(o.lastGeneration, g2);
        QCOMPARE(o.cancelled, 1);
        QCOMPARE(o.failed, 0);
    }

    void cancelSetsTheFlagAndReportsOnce() {
        QObject context;
        JobTracker jobs(&context);
        Outcomes o;
        auto sawCancel = std::make_shared<std::atomic<bool>>(false);
        auto started = std::make_shared<Gate>();
        const quint64 g = jobs.start<int>(
            [sawCancel, started](const JobControl& job) {
                started->open.release();
                while (!job.isCancelled()) std::this_thread::yield();
                sawCancel->store(true);
                job.throwIfCancelled();
                return 0;
            },
            o.handlers<int>());
        started->open.acquire();
        QVERIFY(jobs.cancel());
        QVERIFY(!jobs.isRunning());
        QCOMPARE(o.cancelled, 1);
        QCOMPARE(o.lastGeneration, g);
        QVERIFY(!jobs.cancel());  // nothing running: no second report
        QVERIFY(jobs.waitForIdle());
        QVERIFY(sawCancel->load());
        QCOMPARE(o.cancelled, 1);
        QCOMPARE(o.done + o.failed, 0);
    }

    void cancelledByTheWorkItself() {
        // model::Cancelled thrown by the work (not by cancel()) is the cancelled outcome
        QObject context;
        JobTracker jobs(&context);
        Outcomes o;
        const quint64 g = jobs.start<int>([](const JobControl&) -> int { throw model::Cancelled(); }, o.handlers<int>());
        QVERIFY(jobs.waitForIdle());
        QCOMPARE(o.cancelled, 1);
        QCOMPARE(o.lastGeneration, g);
        QCOMPARE(o.done + o.failed, 0);
    }

    void exceptionsBecomeTheOneLineError_data() {
        QTest::addColumn<int>("kind");
        QTest::addColumn<QString>("message");
        QTest::newRow("ParseError") << 0 << QStringLiteral("run.pickle: byte 12: bad opcode 0x99 on two lines");
        QTest::newRow("SessionError") << 1 << QStringLiteral("run.pickle: damaged session: table 'iterations'");
        QTest::newRow("std::exception") << 2 << QStringLiteral("run.pickle: out of range");
        QTest::newRow("bad_alloc") << 3 << QStringLiteral("run.pickle: not enough memory to load this file");
        QTest::newRow("anything") << 4 << QStringLiteral("run.pickle: an unknown error stopped the work");
    }

    void exceptionsBecomeTheOneLineError() {
        QFETCH(int, kind);
        QFETCH(QString, message);
        QObject context;
        JobTracker jobs(&context);
        Outcomes o;
        jobs.start<int>(
            [kind](const JobControl&) -> int {
                switch (kind) {
                case 0: throw model::ParseError(12, "bad opcode 0x99\non two lines");
                case 1: throw model::SessionError("damaged session: table 'iterations'");
                case 2: throw std::out_of_range("out of range");
                case 3: throw std::bad_alloc();
                default: throw 7;
                }
            },
            o.handlers<int>(), JobText{QStringLiteral("run.pickle")});
        QVERIFY(jobs.waitForIdle());
        QCOMPARE(o.failed, 1);
        QCOMPARE(o.done + o.cancelled, 0);
        QCOMPARE(o.message, message);
        QVERIFY(!o.message.contains(QLatin1Char('\n')));
    }

    void badAllocWithoutASubject() {
        QObject context;
        JobTracker jobs(&context);
        Outcomes o;
        jobs.start<int>([](const JobControl&) -> int { throw std::bad_alloc(); }, o.handlers<int>(),
                        JobText{{}, QStringLiteral("build the trees")});
        QVERIFY(jobs.waitForIdle());
        QCOMPARE(o.message, QStringLiteral("not enough memory to build the trees"));
    }

    void aDestroyedContextReceivesNothing() {
        Outcomes o;
        auto freed = std::make_shared<Freed>();
        auto gate = std::make_shared<Gate>();
        auto* context = new QObject;
        JobTracker jobs(context);
        jobs.start<BigPtr>(
            [gate, freed](const JobControl&) {
                gate->open.acquire();
                return std::make_shared<const Big>(freed, 1);
            },
            o.handlers<BigPtr>());
        delete context;
        gate->open.release();
        QVERIFY(jobs.waitForIdle());
        QCOMPARE(o.done + o.failed + o.cancelled, 0);
        QCOMPARE(freed->count(), size_t(1));
        QVERIFY(freed->threads[0] != std::this_thread::get_id());
    }

    void aDestroyedTrackerReportsNothing() {
        Outcomes o;
        QObject context;
        auto gate = std::make_shared<Gate>();
        {
            JobTracker jobs(&context);
            jobs.start<int>(
                [gate](const JobControl&) {
                    gate->open.acquire();
                    return 1;
                },
                o.handlers<int>());
        }  // not even cancelled: the requester is going away
        gate->open.release();
        QVERIFY(JobTracker::waitForAllIdle());
        QCOMPARE(o.done + o.failed + o.cancelled, 0);
    }

    void staleResultsAreFreedOffTheGuiThread() {
        QObject context;
        JobTracker jobs(&context);
        Outcomes o;
        auto freed = std::make_shared<Freed>();
        // 1. superseded while running: freed where it was made
        auto gate = std::make_shared<Gate>();
        jobs.start<BigPtr>(
            [gate, freed](const JobControl&) {
                gate->open.acquire();
                return std::make_shared<const Big>(freed, 1);
            },
            o.handlers<BigPtr>());
        jobs.start<BigPtr>([freed](const JobControl&) { return std::make_shared<const Big>(freed, 2); }, o.handlers<BigPtr>());
        gate->open.release();
        QVERIFY(jobs.waitForIdle());
        QCOMPARE(o.done, 1);
        QCOMPARE(o.value, 2);
        QCOMPARE(freed->count(), size_t(2));  // the stale one, and the delivered one the handler let go
        // 2. finished and posted, then superseded before the GUI thread took it: handed back to
        // the pool to be freed
        auto done = std::make_shared<Gate>();
        jobs.start<BigPtr>(
            [freed, done](const JobControl&) {
                auto r = std::make_shared<const Big>(freed, 3);
                done->open.release();
                return r;
            },
            o.handlers<BigPtr>());
        done->open.acquire();  // the job is past its work; its outcome is on the way or posted
        jobs.cancel();
        QVERIFY(jobs.waitForIdle());
        QCOMPARE(o.done, 1);
        QCOMPARE(freed->count(), size_t(3));
        // the delivered result died in the handler (GUI thread); both stale ones elsewhere
        const auto gui = std::this_thread::get_id();
        int onGui = 0;
        for (auto t : freed->threads) onGui += t == gui;
        QCOMPARE(onGui, 1);
    }

    void progressIsThrottled() {
        QObject context;
        JobTracker jobs(&context);
        JobHandlers<int> h;
        QStringList phases;
        std::vector<double> fractions;
        h.progress = [&](quint64, const QString& phase, double f) {
            phases << phase;
            fractions.push_back(f);
        };
        h.done = [](quint64, int) {};
        jobs.start<int>(
            [](const JobControl& job) {
                for (int i = 0; i <= 10000; ++i) job.progress("reading", i / 10000.0);
                job.progress("rewinding", 0);
                return 0;
            },
            std::move(h));
        QVERIFY(jobs.waitForIdle());
        QCoreApplication::processEvents();  // progress is posted before the result
        // the phase's start and its end always, at most one a percent in between, then the new phase
        QVERIFY2(phases.size() >= 3 && phases.size() <= 102, qPrintable(QString::number(phases.size())));
        QCOMPARE(phases.last(), QStringLiteral("rewinding"));
        QCOMPARE(fractions.front(), 0.0);
        QCOMPARE(fractions[fractions.size() - 2], 1.0);
        for (size_t i = 1; i + 1 < fractions.size(); ++i)
            QVERIFY(std::floor(fractions[i] * 100) > std::floor(fractions[i - 1] * 100));
    }

    // The throttle's rule, at given times: a phase's first report and its end, otherwise a new
    // percent once kInterval has passed since the last report.
    void progressThrottleRule() {
        using namespace std::chrono_literals;
        ProgressThrottle t;
        const auto t0 = std::chrono::steady_clock::time_point{} + 1h;
        const auto dt = ProgressThrottle::kInterval;
        QVERIFY(t.due("reading", 0.0, t0));
        QVERIFY(!t.due("reading", 0.005, t0 + dt));        // the same percent
        QVERIFY(!t.due("reading", 0.02, t0 + dt - 1ms));   // a new percent, too soon
        QVERIFY(t.due("reading", 0.02, t0 + dt));
        QVERIFY(!t.due("reading", 0.5, t0 + dt + 1ms));
        QVERIFY(t.due("reading", 1.0, t0 + dt + 2ms));      // the end, however soon
        QVERIFY(!t.due("reading", 1.0, t0 + 3 * dt));      // once
        QVERIFY(t.due("rewinding", 0.0, t0 + dt + 3ms));    // a new phase, however soon
        QVERIFY(!t.due("rewinding", 0.3, t0 + dt + 4ms));
        QVERIFY(t.due("rewinding", 0.3, t0 + 2 * dt + 3ms));
    }
};

MEMLENS_CORE_TEST_MAIN(TestJobTracker)
#include "tst_jobtracker.moc"
