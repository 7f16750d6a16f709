#pragma once
// One way to run background work for an object on the GUI thread (a loader, a view): in the
// style of hotspot's job tracker.
//
//   JobTracker m_jobs{this};
//   JobHandlers<Rows> h;
//   h.done = [this](quint64, Rows rows) { install(std::move(rows)); };
//   h.failed = [this](quint64, const QString& message) { showError(message); };
//   m_jobs.start<Rows>([data](const JobControl& job) { return filter(*data, job.cancelFlag()); }, std::move(h));
//
// - Every start() gets a generation id and its own cancel flag; it supersedes the running job
//   (whose flag is set and whose cancelled handler runs at once). cancel() does the same without
//   a new job. Only the newest job's outcome is delivered: exactly one of done, failed or
//   cancelled, on the GUI thread, and only while the context object (and the tracker) lives.
// - The work runs on the job pool and touches no QObject. It may throw: model::Cancelled becomes
//   the cancelled outcome; model::ParseError, model::SessionError, std::bad_alloc, any
//   std::exception and anything else become the one-line error (JobText says what it is about).
// - Results nobody wants any more (superseded, cancelled, context gone) are destroyed on a pool
//   thread, never on the GUI thread: a big snapshot takes a while to free.
// - Progress (JobControl::progress) reaches the handler at most once per percent or phase.
//
// - A tracker made with JobPriority::Background (the analyses: doctor, iteration diff, allocation
//   sites, what-if) runs its jobs on a second pool whose threads have a lower CPU priority (nice
//   10), so that on a small machine they do not slow down what the user waits for: a file being
//   read, the GUI thread drawing its first picture. They still use every idle core.
//
// Tests wait for a tracker (waitForIdle) or for every job of the process (waitForAllIdle)
// instead of sleeping.
#include "memlens/model/ParseError.h"
#include "memlens/model/SnapshotReader.h"

#include <QMetaObject>
#include <QPointer>
#include <QString>

#include <atomic>
#include <exception>
#include <functional>
#include <memory>
#include <chrono>
#include <optional>
#include <utility>

class QThreadPool;

namespace memlens::views {

// Progress reports: when the phase changes or the end of a phase is reached, otherwise at most one
// per percent and one per kInterval. Each report repaints the window's progress panel on the GUI
// thread, which shares the cores with the job: a report per percent of a one-second load took
// 70-110 ms of the GUI thread's time.
class ProgressThrottle {
public:
    static constexpr std::chrono::milliseconds kInterval{50};
    bool due(const char* phase, double fraction) { return due(phase, fraction, std::chrono::steady_clock::now()); }
    bool due(const char* phase, double fraction, std::chrono::steady_clock::time_point now);

private:
    const char* m_phase = nullptr;
    int m_pct = -1;
    std::chrono::steady_clock::time_point m_last{};
};

// What a running job sees: its cancel flag and its progress reporter. Used on the job's thread.
class JobControl {
public:
    bool isCancelled() const { return m_cancel->load(std::memory_order_relaxed); }
    // Throws model::Cancelled once the job was cancelled or superseded.
    void throwIfCancelled() const;
    // For model functions that take a cancel flag (they throw model::Cancelled).
    const std::atomic<bool>* cancelFlag() const { return m_cancel.get(); }
    // phase: a string literal ("reading"); fraction in [0, 1]. Throttled.
    void progress(const char* phase, double fraction) const;
    // Options for the model's readers: this job's cancel flag and progress.
    model::LoadOptions loadOptions() const;

private:
    friend class JobTracker;
    std::shared_ptr<std::atomic<bool>> m_cancel;
    std::function<void(const char*, double)> m_report;  // empty: nobody listens
    mutable ProgressThrottle m_throttle;
};

// What the one-line error is about. subject: usually the file ("run.memlens"), put in front
// ("run.memlens: byte 12: what"); task: what ran out of memory ("not enough memory to TASK").
struct JobText {
    QString subject;
    QString task = QStringLiteral("load this file");
};

enum class JobPriority { Normal, Background };

template <typename Result>
struct JobHandlers {
    std::function<void(quint64 generation, Result result)> done;
    std::function<void(quint64 generation, const QString& message)> failed;  // one line
    // cancel(), a newer start(), or the work threw model::Cancelled.
    std::function<void(quint64 generation)> cancelled;
    std::function<void(quint64 generation, const QString& phase, double fraction)> progress;
};

class JobTracker {
public:
    // Outcomes are delivered only while CONTEXT (on the GUI thread) and this tracker live.
    explicit JobTracker(QObject* context, JobPriority priority = JobPriority::Normal);
    // Cancels the running job; it reports nothing (not even cancelled).
    ~JobTracker();
    JobTracker(const JobTracker&) = delete;
    JobTracker& operator=(const JobTracker&) = delete;

    // Runs WORK on the job pool; returns the job's generation id (never 0).
    template <typename Result>
    quint64 start(std::function<Result(const JobControl&)> work, JobHandlers<Result> handlers, JobText text = {});

    // Sets the running job's cancel flag, drops whatever it still delivers and runs its cancelled
    // handler now. Returns whether a job was running.
    bool cancel();
    // A job started whose outcome was not delivered yet.
    bool isRunning() const { return m_state->running != 0; }
    quint64 runningGeneration() const { return m_state->running; }
    // The last generation handed out (0: none yet).
    quint64 generation() const { return m_state->generation; }

    // Processes events until none of this tracker's jobs runs, waits to be delivered or to be
    // freed (superseded ones too). Returns false on timeout.
    bool waitForIdle(int timeoutMs = 60000) const;
    // The same for every tracker of the process.
    static bool waitForAllIdle(int timeoutMs = 60000);
    // The pool the jobs run on (also frees stale results).
    static QThreadPool* pool();
    // The pool of Background trackers' jobs; its threads run at nice 10 (where the system lets
    // them: Linux).
    static QThreadPool* backgroundPool();

    // The one-line error for an exception a job threw (not model::Cancelled).
    static QString describe(std::exception_ptr error, const JobText& text);

private:
    struct State {
        QPointer<QObject> context;
        bool alive = true;       // the tracker exists (GUI thread only)
        quint64 generation = 0;  // GUI thread only
        quint64 running = 0;     // GUI thread only; 0: none
        std::shared_ptr<std::atomic<bool>> cancel;
        std::function<void(quint64)> onCancelled;
        std::atomic<int> inFlight{0};  // jobs, deliveries and releases not finished
        JobPriority priority = JobPriority::Normal;
    };

    // GUI thread: whether an outcome of GENERATION is still wanted (and marks it delivered).
    static bool claim(State& s, quint64 generation);
    // Bookkeeping of in-flight work (any thread).
    static void begin(State& s);
    static void end(State& s);
    // Runs FN on the GUI thread (queued to the application object).
    static void post(std::function<void()> fn);
    // Destroys what FN holds on a pool thread, then ends one in-flight unit of S.
    static void releaseOffGuiThread(std::shared_ptr<State> s, std::shared_ptr<void> garbage);
    static void runOnPool(std::function<void()> fn, JobPriority priority = JobPriority::Normal);

    std::shared_ptr<State> m_state;
};

template <typename Result>
quint64 JobTracker::start(std::function<Result(const JobControl&)> work, JobHandlers<Result> handlers, JobText text) {
    cancel();
    auto state = m_state;
    const quint64 generation = ++state->generation;
    state->running = generation;
    auto cancelFlag = std::make_shared<std::atomic<bool>>(false);
    state->cancel = cancelFlag;
    auto h = std::make_shared<const JobHandlers<Result>>(std::move(handlers));
    state->onCancelled = [h](quint64 g) {
        if (h->cancelled) h->cancelled(g);
    };
    std::weak_ptr<State> weak = state;
    begin(*state);
    const JobPriority priority = state->priority;
    runOnPool([state, weak, generation, cancelFlag, h, text, work = std::move(work)]() mutable {
        JobControl control;
        control.m_cancel = cancelFlag;
        if (h->progress)
            control.m_report = [weak, generation, h](const char* phase, double fraction) {
                const QString p = QString::fromUtf8(phase);
                post([weak, generation, h, p, fraction] {
                    auto s = weak.lock();
                    if (s && s->alive && s->context && s->running == generation) h->progress(generation, p, fraction);
                });
            };
        // the outcome: a result, an error text, or cancelled
        auto result = std::make_shared<std::optional<Result>>();
        QString error;
        bool cancelled = false;
        try {
            result->emplace(work(control));
        } catch (const model::Cancelled&) {
            cancelled = true;
        } catch (...) {
            error = describe(std::current_exception(), text);
        }
        work = nullptr;  // what the work captured goes here, off the GUI thread
        if (cancelFlag->load()) {
            // superseded or cancelled: nothing is delivered; the result dies on this thread
            result.reset();
            end(*state);
            return;
        }
        post([state, generation, h, result = std::move(result), error, cancelled]() mutable {
            if (!claim(*state, generation)) {
                releaseOffGuiThread(std::move(state), std::move(result));
                return;
            }
            if (cancelled) {
                if (h->cancelled) h->cancelled(generation);
            } else if (result->has_value()) {
                if (h->done) h->done(generation, std::move(**result));
            } else if (h->failed) {
                h->failed(generation, error);
            }
            end(*state);
        });
    }, priority);
    return generation;
}

} // namespace memlens::views
