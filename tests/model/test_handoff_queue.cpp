// HandoffQueue: records written on one thread are consumed in the order written, on a second
// thread once a block fills (on the writer's, by finish(), where none did); a writer ahead of its
// consumer waits for a block; what the consumer throws reaches the writer; a queue given up
// stops its thread.
#include "memlens/model/HandoffQueue.h"

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

using memlens::model::HandoffQueue;

namespace {

// Records of 1 to 5 words: the count, then the record's number that many times less one.
struct Records {
    std::vector<uint64_t> seen;  // each record's number, as consumed
    std::set<std::thread::id> threads;
    std::set<const uint64_t*> blocks;
    bool malformed = false;

    void consume(const uint64_t* w, size_t n) {
        threads.insert(std::this_thread::get_id());
        blocks.insert(w);
        for (size_t i = 0; i < n;) {
            const uint64_t count = w[i];
            if (count < 1 || count > 5 || i + count > n) {
                malformed = true;
                return;
            }
            for (size_t k = 1; k < count; ++k)
                if (w[i + k] != w[i + 1]) malformed = true;
            seen.push_back(count > 1 ? w[i + 1] : ~uint64_t(0));
            i += count;
        }
    }
};

// Writes record r (r = 0, 1, ...): r % 5 + 1 words.
void write(HandoffQueue& q, uint64_t r) {
    const size_t count = r % 5 + 1;
    uint64_t* w = q.reserve(count);
    w[0] = count;
    for (size_t k = 1; k < count; ++k) w[k] = r;
    q.commit(count);
}

std::vector<uint64_t> expectedNumbers(uint64_t records) {
    std::vector<uint64_t> out;
    for (uint64_t r = 0; r < records; ++r) out.push_back(r % 5 == 0 ? ~uint64_t(0) : r);
    return out;
}

} // namespace

TEST(HandoffQueue, AShortInputIsConsumedByFinishOnTheWritingThread) {
    Records got;
    HandoffQueue q([&](const uint64_t* w, size_t n) { got.consume(w, n); }, 64, 4);
    for (uint64_t r = 0; r < 20; ++r) write(q, r);  // 60 words: one block
    EXPECT_TRUE(got.seen.empty());                   // nothing consumed before finish()
    q.finish();
    EXPECT_FALSE(q.threadStarted());
    EXPECT_FALSE(got.malformed);
    EXPECT_EQ(got.seen, expectedNumbers(20));
    EXPECT_EQ(got.threads, std::set<std::thread::id>{std::this_thread::get_id()});
    EXPECT_THROW(q.reserve(1), std::logic_error);  // finished: the block is closed
}

TEST(HandoffQueue, ARecordLongerThanABlockIsRefused) {
    HandoffQueue q([](const uint64_t*, size_t) {}, 16, 2);
    EXPECT_THROW(q.reserve(17), std::length_error);
    uint64_t* w = q.reserve(16);  // a whole block is fine
    w[0] = 0;
    q.commit(16);
    q.finish();
}

TEST(HandoffQueue, ALongInputIsConsumedInOrderOnASecondThreadInFewBlocks) {
    Records got;
    constexpr uint64_t kRecords = 200'000;  // 600,000 words in blocks of 256: 2,300 hand-offs
    HandoffQueue q([&](const uint64_t* w, size_t n) { got.consume(w, n); }, 256, 3);
    for (uint64_t r = 0; r < kRecords; ++r) write(q, r);
    q.finish();
    EXPECT_TRUE(q.threadStarted());
    EXPECT_FALSE(got.malformed);
    EXPECT_EQ(got.seen, expectedNumbers(kRecords));
    // finish() waited for the thread: everything here was consumed there, in at most 3 blocks
    EXPECT_EQ(got.threads.size(), 1u);
    EXPECT_EQ(got.threads.count(std::this_thread::get_id()), 0u);
    EXPECT_LE(got.blocks.size(), 3u);
}

// A writer ahead of its consumer waits: with the consumer held in its first block, the writer
// fills the one other block there may be and stops in reserve() until the consumer goes on.
TEST(HandoffQueue, AWriterAheadOfItsConsumerWaitsForAFreeBlock) {
    std::mutex m;
    std::condition_variable cv;
    bool release = false;
    std::atomic<uint64_t> consumedWords{0};
    std::set<const uint64_t*> blocks;
    HandoffQueue q(
        [&](const uint64_t* w, size_t n) {
            std::unique_lock lock(m);
            blocks.insert(w);
            cv.wait(lock, [&] { return release; });
            consumedWords += n;
        },
        16, 2);
    std::atomic<uint64_t> written{0};
    std::thread writer([&] {
        for (int i = 0; i < 100; ++i) {
            uint64_t* w = q.reserve(4);
            w[0] = w[1] = w[2] = w[3] = 0;
            q.commit(4);
            ++written;
        }
        q.finish();
    });
    // the writer waits (or, were the blocks not bounded, writes all 100 records)
    while (q.writerWaits() == 0 && written.load() < 100) std::this_thread::yield();
    // blocks of 16 words: 4 records in the first (handed off, held), 4 in the second, and the
    // 9th waits for a block
    EXPECT_EQ(q.writerWaits(), 1u);
    EXPECT_EQ(written.load(), 8u);
    {
        std::lock_guard lock(m);
        release = true;
    }
    cv.notify_all();
    writer.join();
    EXPECT_EQ(written.load(), 100u);
    EXPECT_EQ(consumedWords.load(), 400u);
    EXPECT_EQ(blocks.size(), 2u);  // the two blocks, written again and again
}

TEST(HandoffQueue, WhatTheConsumerThrowsReachesTheWriter) {
    int calls = 0;
    HandoffQueue q(
        [&](const uint64_t*, size_t) {
            if (++calls == 2) throw std::length_error("too many rows");
        },
        32, 2);
    bool thrown = false;
    try {
        for (int i = 0; i < 100'000; ++i) {
            uint64_t* w = q.reserve(8);
            w[0] = 0;
            q.commit(8);
        }
        q.finish();
    } catch (const std::length_error& e) {
        thrown = true;
        EXPECT_STREQ(e.what(), "too many rows");
    }
    EXPECT_TRUE(thrown);
    EXPECT_EQ(calls, 2);  // nothing consumed after the throw
}

TEST(HandoffQueue, WhatTheConsumerThrowsAtTheEndReachesFinish) {
    HandoffQueue q([&](const uint64_t*, size_t n) {
        if (n < 32) throw std::runtime_error("the last block");
    }, 32, 2);
    for (int i = 0; i < 10; ++i) {  // 2 full blocks of 32, and 16 words left for finish()
        uint64_t* w = q.reserve(8);
        w[0] = 0;
        q.commit(8);
    }
    EXPECT_TRUE(q.threadStarted());
    EXPECT_THROW(q.finish(), std::runtime_error);
}

// Given up (a parse that fails or is cancelled) with blocks handed off and not consumed yet: the
// destructor returns, its thread stopped, having consumed no more than was handed off (it may
// drop the rest: whether it does depends on when the thread sees that the queue was given up).
TEST(HandoffQueue, AQueueGivenUpStopsItsThread) {
    std::mutex m;
    std::condition_variable cv;
    bool inFirst = false, release = false;
    std::atomic<int> calls{0};
    {
        HandoffQueue q(
            [&](const uint64_t*, size_t) {
                std::unique_lock lock(m);
                if (++calls == 1) {
                    inFirst = true;
                    cv.notify_all();
                    cv.wait(lock, [&] { return release; });
                }
            },
            8, 4);
        for (int i = 0; i < 3 * 8; ++i) {  // three blocks: the first being consumed, two waiting
            uint64_t* w = q.reserve(1);
            w[0] = 0;
            q.commit(1);
        }
        uint64_t* w = q.reserve(1);  // hands off the third
        w[0] = 0;
        q.commit(1);
        std::unique_lock lock(m);
        cv.wait(lock, [&] { return inFirst; });
        release = true;
        lock.unlock();
        cv.notify_all();
    }  // ~HandoffQueue
    EXPECT_GE(calls.load(), 1);
    EXPECT_LE(calls.load(), 3);  // the three blocks handed off; the fourth, being written, never
}
