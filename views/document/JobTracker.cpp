#include "document/JobTracker.h"

#include "core/HandOver.h"

#include "memlens/model/ParseError.h"
#include "memlens/model/SessionData.h"

#include <QCoreApplication>
#include <QDeadlineTimer>
#include <QEvent>
#include <QPointer>
#include <QThread>
#include <QThreadPool>

#include <chrono>
#include <cmath>
#include <condition_variable>
#include <mutex>
#include <new>

#ifdef __linux__
#include <sys/resource.h>
#include <unistd.h>
#endif

namespace memlens::views {

namespace {

// Every tracker's in-flight work, for waitForAllIdle().
std::atomic<int> g_inFlight{0};
std::mutex g_idleMutex;
std::condition_variable g_idle;

void notifyIdle() {
    {
        const std::lock_guard<std::mutex> lock(g_idleMutex);
    }
    g_idle.notify_all();
}

// Processes events until DONE() holds; in between it waits (briefly) for work on other threads.
bool waitUntil(const std::function<bool()>& done, int timeoutMs) {
    QDeadlineTimer deadline(timeoutMs);
    while (!done()) {
        if (deadline.hasExpired()) return false;
        QCoreApplication::processEvents(QEventLoop::AllEvents);
        if (done()) break;
        std::unique_lock<std::mutex> lock(g_idleMutex);
        // woken when a job ends on a worker; deliveries are posted events, so the wait is short
        g_idle.wait_for(lock, std::chrono::milliseconds(5));
    }
    return true;
}

// The calling thread (one of backgroundPool()'s) at nice 10, once: an unprivileged thread cannot
// come back, which is why the background jobs have a pool of their own.
void lowerThisThreadOnce() {
#ifdef __linux__
    thread_local bool lowered = false;
    if (lowered) return;
    lowered = true;
    ::setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()), 10);
#endif
}

} // namespace

bool ProgressThrottle::due(const char* phase, double fraction, std::chrono::steady_clock::time_point now) {
    const int pct = static_cast<int>(std::floor(fraction * 100));
    if (phase == m_phase && (pct == m_pct || (pct < 100 && now - m_last < kInterval))) return false;
    m_phase = phase;
    m_pct = pct;
    m_last = now;
    return true;
}

void JobControl::throwIfCancelled() const {
    if (isCancelled()) throw model::Cancelled();
}

void JobControl::progress(const char* phase, double fraction) const {
    if (m_report && m_throttle.due(phase, fraction)) m_report(phase, fraction);
}

model::LoadOptions JobControl::loadOptions() const {
    model::LoadOptions options;
    options.cancel = m_cancel.get();
    if (m_report) options.progress = [this](const char* phase, double fraction) { progress(phase, fraction); };
    return options;
}

namespace {

// A result handed to the GUI thread: an event our code builds completely before posting it, so
// that the hand-over can be told to ThreadSanitizer (HandOver.h) after the last write.
class DeliveryEvent : public QEvent {
public:
    static QEvent::Type type() {
        static const auto t = static_cast<QEvent::Type>(QEvent::registerEventType());
        return t;
    }
    explicit DeliveryEvent(std::function<void()> fn) : QEvent(type()), m_fn(std::move(fn)) {}
    void run() { m_fn(); }

private:
    std::function<void()> m_fn;
};

// Receives the deliveries on the GUI thread; created there (by the first JobTracker).
class Deliverer : public QObject {
public:
    using QObject::QObject;
    bool event(QEvent* e) override {
        if (e->type() != DeliveryEvent::type()) return QObject::event(e);
        takeOver();
        static_cast<DeliveryEvent*>(e)->run();
        return true;
    }
};

QPointer<Deliverer>& deliverer() {
    static QPointer<Deliverer> d;
    return d;
}

} // namespace

JobTracker::JobTracker(QObject* context, JobPriority priority) : m_state(std::make_shared<State>()) {
    m_state->context = context;
    m_state->priority = priority;
    // trackers are made on the GUI thread: so is the object deliveries are posted to
    if (!deliverer() && QCoreApplication::instance()) deliverer() = new Deliverer(QCoreApplication::instance());
}

JobTracker::~JobTracker() {
    m_state->alive = false;
    if (m_state->cancel) m_state->cancel->store(true);
    m_state->running = 0;
    m_state->onCancelled = nullptr;
}

bool JobTracker::cancel() {
    State& s = *m_state;
    if (s.cancel) s.cancel->store(true);
    s.cancel.reset();
    if (s.running == 0) return false;
    const quint64 g = s.running;
    s.running = 0;
    // the handler may start another job, which replaces onCancelled
    auto onCancelled = std::move(s.onCancelled);
    s.onCancelled = nullptr;
    if (onCancelled) onCancelled(g);
    return true;
}

bool JobTracker::claim(State& s, quint64 generation) {
    if (!s.alive || !s.context || s.running != generation) return false;
    s.running = 0;
    s.cancel.reset();
    s.onCancelled = nullptr;
    return true;
}

void JobTracker::begin(State& s) {
    s.inFlight.fetch_add(1);
    g_inFlight.fetch_add(1);
}

void JobTracker::end(State& s) {
    s.inFlight.fetch_sub(1);
    g_inFlight.fetch_sub(1);
    notifyIdle();
}

void JobTracker::post(std::function<void()> fn) {
    // posted to an object of the application, not to the context: the call always runs, so a
    // result whose context is gone is still handed back to the pool to be freed there
    QObject* to = deliverer().data();
    if (!QCoreApplication::instance() || !to) return;
    auto* e = new DeliveryEvent(std::move(fn));
    handOver();
    QCoreApplication::postEvent(to, e);
}

void JobTracker::runOnPool(std::function<void()> fn, JobPriority priority) {
    const bool background = priority == JobPriority::Background;
    std::function<void()> task = [fn = std::move(fn), background] {
        takeOver();
        if (background) lowerThisThreadOnce();
        fn();
    };
    handOver();
    (background ? backgroundPool() : pool())->start(std::move(task));
}

void JobTracker::releaseOffGuiThread(std::shared_ptr<State> s, std::shared_ptr<void> garbage) {
    runOnPool([s = std::move(s), garbage = std::move(garbage)]() mutable {
        garbage.reset();
        end(*s);
    });
}

namespace {

// A pool that is the application's child: its destructor waits for the jobs still running (their
// trackers, gone with the windows, have cancelled them).
QThreadPool* applicationPool(QPointer<QThreadPool>& p, const char* name) {
    if (!p) {
        p = new QThreadPool(QCoreApplication::instance());
        p->setObjectName(QString::fromLatin1(name));
        p->setMaxThreadCount(std::max(4, QThread::idealThreadCount()));
    }
    return p;
}

} // namespace

QThreadPool* JobTracker::backgroundPool() {
    static QPointer<QThreadPool> p;
    return applicationPool(p, "memlens analyses");
}

QThreadPool* JobTracker::pool() {
    static QPointer<QThreadPool> p;
    return applicationPool(p, "memlens jobs");
}

bool JobTracker::waitForIdle(int timeoutMs) const {
    const State* s = m_state.get();
    return waitUntil([s] { return s->inFlight.load() == 0; }, timeoutMs);
}

bool JobTracker::waitForAllIdle(int timeoutMs) {
    return waitUntil([] { return g_inFlight.load() == 0; }, timeoutMs);
}

QString JobTracker::describe(std::exception_ptr error, const JobText& text) {
    const QString prefix = text.subject.isEmpty() ? QString() : text.subject + QStringLiteral(": ");
    auto oneLine = [](QString s) {
        s.replace(QLatin1Char('\r'), QLatin1Char(' '));
        s.replace(QLatin1Char('\n'), QLatin1Char(' '));
        return s;
    };
    try {
        std::rethrow_exception(error);
    } catch (const model::ParseError& e) {
        if (!text.subject.isEmpty()) return oneLine(QString::fromStdString(e.describe(text.subject.toStdString())));
        QString where = QString::fromStdString(e.where());
        if (where.isEmpty() && e.offset() != model::ParseError::kNoOffset) where = QStringLiteral("byte %1").arg(e.offset());
        return oneLine((where.isEmpty() ? QString() : where + QStringLiteral(": ")) + QString::fromUtf8(e.what()));
    } catch (const std::bad_alloc&) {
        return prefix + QStringLiteral("not enough memory to ") + text.task;
    } catch (const model::SessionError& e) {
        return oneLine(prefix + QString::fromUtf8(e.what()));
    } catch (const std::exception& e) {
        return oneLine(prefix + QString::fromUtf8(e.what()));
    } catch (...) {
        return prefix + QStringLiteral("an unknown error stopped the work");
    }
}

} // namespace memlens::views
