#pragma once
// A queue of work from one thread to a second (the snapshot reader's trace rows, TraceRows).
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace memlens::model {

// Words written on one thread and consumed, in the order written, on a second: work that the
// first thread would otherwise do itself, handed off in blocks. Records of a few words are written
// into the current block (reserve(), commit()); a full block goes to the consumer's thread, which
// is started with the first full block, so that a short input is consumed on the writing thread
// (by finish()) and starts no thread at all. At most `blocks` blocks are allocated: a writer that
// runs ahead of the consumer waits for a block the consumer is done with.
class HandoffQueue {
public:
    // Called with each block's words, in order: on the consumer's thread, or on the thread that
    // calls finish() for what it finds there. What it throws stops the consumption; the writer
    // gets it from its next full block, or from finish().
    using Consume = std::function<void(const uint64_t* words, size_t n)>;
    explicit HandoffQueue(Consume consume, size_t blockWords = 8192, size_t blocks = 8);
    // Stops the consumer's thread: what it has not consumed yet is dropped (an input given up).
    ~HandoffQueue();
    HandoffQueue(const HandoffQueue&) = delete;
    HandoffQueue& operator=(const HandoffQueue&) = delete;

    // Room for k words at the end of the current block; commit(k) after writing them. Not after
    // finish() (std::logic_error), nor for more words than a block has (std::length_error).
    [[gnu::always_inline]] uint64_t* reserve(size_t k) {
        if (static_cast<size_t>(end_ - cur_) < k) [[unlikely]]
            handOff(k);
        return cur_;
    }
    void commit(size_t k) { cur_ += k; }

    // Everything committed is consumed when it returns (or it throws what the consumer threw).
    void finish();
    bool finished() const { return finished_; }
    // Whether the consumer's thread was started (tests: a long enough input hands off).
    bool threadStarted() const { return startedOnce_; }
    // Times the writer has waited for a free block (it ran ahead of the consumer), counted as
    // it starts to wait.
    uint64_t writerWaits() const { return writerWaits_.load(std::memory_order_acquire); }

private:
    void handOff(size_t k);  // the current block to the consumer, and a free one to write k words into
    void loop();
    void rethrowError();  // with m_ held

    Consume consume_;
    const size_t blockWords_;
    const size_t maxBlocks_;
    std::vector<std::unique_ptr<uint64_t[]>> storage_;
    uint64_t* block_ = nullptr;  // the block being written, from block_ to cur_
    uint64_t* cur_ = nullptr;
    uint64_t* end_ = nullptr;
    bool finished_ = false;
    bool startedOnce_ = false;
    std::atomic<uint64_t> writerWaits_{0};

    std::mutex m_;
    std::condition_variable fullCv_;  // the consumer waits for a full block (or the end)
    std::condition_variable freeCv_;  // the writer waits for a free block
    std::deque<std::pair<uint64_t*, size_t>> full_;
    std::vector<uint64_t*> free_;
    bool ended_ = false;      // no more blocks will come: consume what is there and return
    bool abandoned_ = false;  // return now
    std::exception_ptr error_;
    std::thread thread_;
};

} // namespace memlens::model
