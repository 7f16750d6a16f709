#pragma once
// Tells ThreadSanitizer about hand-overs between threads that Qt makes: an event posted to
// another thread's object, or a function started on a QThreadPool. Qt's own locks are in an
// uninstrumented library (the tsan preset runs with ignore_noninstrumented_modules), so without
// these the sanitizer sees the data written on one thread and read on another with nothing in
// between. Build the event (or the std::function) completely, call handOver() on the sending
// thread, then post it; call takeOver() first thing on the receiving thread, before reading it
// (JobTracker::post and runOnPool). Without ThreadSanitizer both are empty.
#if defined(__SANITIZE_THREAD__)
#define MEMLENS_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define MEMLENS_TSAN 1
#endif
#endif

#ifdef MEMLENS_TSAN
extern "C" void __tsan_acquire(void* addr);
extern "C" void __tsan_release(void* addr);
#endif

namespace memlens::views {

#ifdef MEMLENS_TSAN
inline char g_handOverClock;  // one synchronisation object for every hand-over
inline void handOver() { __tsan_release(&g_handOverClock); }
inline void takeOver() { __tsan_acquire(&g_handOverClock); }
#else
inline void handOver() {}
inline void takeOver() {}
#endif

} // namespace memlens::views
