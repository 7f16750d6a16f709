#include "Prefaulter.h"

#include <sys/mman.h>
#include <unistd.h>

namespace memlens::model {

Prefaulter::Prefaulter() : thread_([this] { loop(); }) {}

Prefaulter::~Prefaulter() {
    {
        std::lock_guard lock(m_);
        stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
}

void Prefaulter::request(const void* begin, size_t bytes) {
    {
        std::lock_guard lock(m_);
        ranges_.emplace_back(reinterpret_cast<uintptr_t>(begin), bytes);
    }
    cv_.notify_one();
}

void Prefaulter::loop() {
    const uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
    for (;;) {
        std::pair<uintptr_t, size_t> r;
        {
            std::unique_lock lock(m_);
            cv_.wait(lock, [&] { return stop_ || !ranges_.empty(); });
            if (stop_) return;
            r = ranges_.front();
            ranges_.pop_front();
        }
        uintptr_t first = r.first & ~(page - 1);
#ifdef MADV_POPULATE_WRITE
        ::madvise(reinterpret_cast<void*>(first), r.first + r.second - first, MADV_POPULATE_WRITE);
#endif
    }
}

} // namespace memlens::model
