#pragma once
// The job's end of the recorder socket, for C++ programs (the Python agent has its own):
// connects to $MEMLENS_SOCKET, checks that the recorder runs as the same user (SO_PEERCRED), and
// sends protocol messages (Protocol.h) without blocking the caller: a small message goes out
// at once when nothing is waiting (so that it survives the process being killed right after),
// anything else through a bounded queue and a sender thread. A full queue drops the message.
#include "memlens/capture/Protocol.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <string>
#include <thread>

namespace memlens::capture {

class RecorderClient {
public:
    struct Options {
        uint64_t maxQueuedBytes = 512ull << 20;
        size_t maxQueuedMessages = 10000;
    };
    // Throws ProtocolError when the recorder cannot be reached.
    RecorderClient(const std::string& socketPath, Options options);
    explicit RecorderClient(const std::string& socketPath) : RecorderClient(socketPath, Options{}) {}
    ~RecorderClient();  // flushes for up to 60 s, then closes
    RecorderClient(const RecorderClient&) = delete;
    RecorderClient& operator=(const RecorderClient&) = delete;

    // false: dropped (queue full) or the recorder is gone. mustKeep ignores the queue bounds
    // (the out-of-memory and exit snapshots).
    bool send(const nlohmann::json& head, std::string blob = {}, bool mustKeep = false);
    // Waits until everything queued was written to the socket; false on timeout or failure.
    bool flush(std::chrono::milliseconds timeout);
    // Whether the recorder asked for a snapshot since the last call.
    bool takeSnapshotRequest() { return snapshotRequested_.exchange(false); }
    bool connected() const { return !dead_; }
    uint64_t dropped() const { return dropped_; }

private:
    struct Item {
        std::string start;  // header + JSON (or the rest of them after a partial send)
        std::string blob;
        size_t blobSent = 0;
    };
    void sendLoop();
    void readLoop();
    bool writeAll(Item& item);

    int fd_ = -1;
    Options options_;
    std::mutex mu_;
    std::condition_variable cv_, idle_;
    std::deque<Item> queue_;
    uint64_t queuedBytes_ = 0;
    bool busy_ = false, stop_ = false;
    std::atomic<bool> dead_{false}, snapshotRequested_{false};
    std::atomic<uint64_t> dropped_{0};
    std::thread sender_, reader_;
};

} // namespace memlens::capture
