#pragma once
// Internal to the snapshot reader.
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <thread>
#include <utility>

namespace memlens::model {

// Takes the page faults of memory about to be written on a second thread: the trace columns are
// reserved up front, and each of their pages would otherwise fault on the parsing thread when
// first written. Populating a page does not change what it holds, so a range freed meanwhile
// (a column that outgrew its reservation) is harmless.
class Prefaulter {
public:
    Prefaulter();
    ~Prefaulter();
    Prefaulter(const Prefaulter&) = delete;
    Prefaulter& operator=(const Prefaulter&) = delete;

    void request(const void* begin, size_t bytes);

private:
    void loop();

    std::mutex m_;
    std::condition_variable cv_;
    std::deque<std::pair<uintptr_t, size_t>> ranges_;
    bool stop_ = false;
    std::thread thread_;  // last: starts once the members above exist
};

} // namespace memlens::model
