#include "memlens/model/HandoffQueue.h"

#include <algorithm>
#include <stdexcept>

namespace memlens::model {

HandoffQueue::HandoffQueue(Consume consume, size_t blockWords, size_t blocks)
    : consume_(std::move(consume)), blockWords_(blockWords), maxBlocks_(std::max<size_t>(blocks, 2)) {
    if (blockWords_ == 0) throw std::invalid_argument("HandoffQueue: blocks of no words");
    storage_.push_back(std::make_unique<uint64_t[]>(blockWords_));
    block_ = cur_ = storage_.back().get();
    end_ = block_ + blockWords_;
}

HandoffQueue::~HandoffQueue() {
    if (!thread_.joinable()) return;
    {
        std::lock_guard lock(m_);
        abandoned_ = true;
    }
    fullCv_.notify_all();
    thread_.join();
}

void HandoffQueue::rethrowError() {
    if (error_) std::rethrow_exception(error_);
}

void HandoffQueue::handOff(size_t k) {
    if (finished_) throw std::logic_error("HandoffQueue: written to after finish()");
    if (k > blockWords_) throw std::length_error("HandoffQueue: a record longer than a block");
    const bool start = !thread_.joinable();
    {
        std::unique_lock lock(m_);
        rethrowError();
        full_.emplace_back(block_, static_cast<size_t>(cur_ - block_));
        if (free_.empty() && storage_.size() < maxBlocks_) {
            storage_.push_back(std::make_unique<uint64_t[]>(blockWords_));
            free_.push_back(storage_.back().get());
        }
        if (!start) {
            fullCv_.notify_one();
            if (free_.empty() && !error_) writerWaits_.fetch_add(1, std::memory_order_release);
            freeCv_.wait(lock, [&] { return !free_.empty() || error_; });
            rethrowError();
        }
        block_ = cur_ = free_.back();
        free_.pop_back();
        end_ = block_ + blockWords_;
    }
    if (start) {  // the first full block: the consumer's thread starts with it
        startedOnce_ = true;
        thread_ = std::thread([this] { loop(); });
    }
}

void HandoffQueue::loop() {
    for (;;) {
        std::pair<uint64_t*, size_t> b;
        {
            std::unique_lock lock(m_);
            fullCv_.wait(lock, [&] { return abandoned_ || ended_ || !full_.empty(); });
            if (abandoned_ || full_.empty()) return;
            b = full_.front();
            full_.pop_front();
        }
        try {
            consume_(b.first, b.second);
        } catch (...) {
            std::lock_guard lock(m_);
            error_ = std::current_exception();
            freeCv_.notify_all();
            return;
        }
        {
            std::lock_guard lock(m_);
            free_.push_back(b.first);
        }
        freeCv_.notify_one();
    }
}

void HandoffQueue::finish() {
    if (finished_) return;
    finished_ = true;
    const size_t n = static_cast<size_t>(cur_ - block_);
    if (!thread_.joinable()) {  // nothing was handed off: consumed here
        end_ = cur_;
        if (n) consume_(block_, n);
        return;
    }
    {
        std::lock_guard lock(m_);
        if (n && !error_) full_.emplace_back(block_, n);
        ended_ = true;
    }
    fullCv_.notify_all();
    thread_.join();
    end_ = cur_;
    std::lock_guard lock(m_);
    rethrowError();
}

} // namespace memlens::model
