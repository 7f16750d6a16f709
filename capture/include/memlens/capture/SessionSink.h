#pragma once
// The writer side of a capture: a thread that applies protocol messages (Protocol.h) to a
// session file (model::SessionWriter), in the order they were posted. Posting never waits for
// the disk except when more than maxQueuedBytes of snapshot bytes are already waiting; that
// back pressure reaches the job's sender thread, never its training loop.
#include "memlens/capture/Protocol.h"
#include "memlens/model/SessionData.h"

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <variant>
#include <vector>

namespace memlens::model {
class SessionWriter;
}

namespace memlens::capture {

class SessionSink {
public:
    struct Options {
        uint64_t maxQueuedBytes = 1ull << 30;
        int heartbeatMs = 1000;
        bool quiet = false;  // no diagnostics on stderr
    };
    struct Stats {
        uint64_t messages = 0, iterations = 0, snapshots = 0, snapshotBytes = 0, samples = 0, markers = 0,
                 graphScans = 0, writeErrors = 0;
        uint64_t otherProcesses = 0;  // messages of agents whose records are not kept (see keeps())
        double snapshotWriteSeconds = 0;  // time spent writing snapshot rows
        uint64_t maxQueuedBytes = 0;      // high-water mark of waiting snapshot bytes
    };

    SessionSink(std::unique_ptr<model::SessionWriter> writer, model::SessionProcess initial, Options options);
    SessionSink(std::unique_ptr<model::SessionWriter> writer, model::SessionProcess initial)
        : SessionSink(std::move(writer), std::move(initial), Options{}) {}
    ~SessionSink();
    SessionSink(const SessionSink&) = delete;
    SessionSink& operator=(const SessionSink&) = delete;

    // Thread-safe.
    void post(Message m);
    void postSamples(std::vector<model::DeviceSample> samples);
    void updateProcess(std::function<void(model::SessionProcess&)> change);
    // Writes everything posted, then marks the session finished. Idempotent.
    void close();

    Stats stats() const;
    // The source whose records are kept now (see keeps()); 0 before any message. Thread-safe.
    int64_t keptSource() const { return keptNow_.load(); }
    // Bytes of snapshot blobs posted and not written yet.
    uint64_t queuedBytes() const;

private:
    using Item = std::variant<Message, std::vector<model::DeviceSample>, std::function<void(model::SessionProcess&)>>;
    void run();
    void apply(Message& m);
    // A job may run several processes with an agent: a launcher and its workers (torchrun,
    // torch.multiprocessing.spawn), helpers started with the same environment. The session keeps
    // one process's records: the first to connect, until a process reports an iteration as rank 0
    // or without a rank; from then on that one's (its hello and process records replayed over the
    // first's, which becomes the launcher). Whether M's records are kept.
    bool keeps(const Message& m);
    void applyProcessRecord(const nlohmann::json& h, const std::string& type);
    void writeProcess();
    void reportError(const std::string& what);

    std::unique_ptr<model::SessionWriter> writer_;
    model::SessionProcess process_;
    Options options_;
    mutable std::mutex mu_;
    std::condition_variable cv_, space_;
    std::deque<Item> queue_;
    uint64_t queuedBytes_ = 0;
    bool closing_ = false, closed_ = false;
    Stats stats_;
    int64_t lastIteration_ = 0;
    int64_t firstSource_ = -1, keptSource_ = -1;  // -1: none yet
    std::atomic<int64_t> keptNow_{0};
    std::map<int64_t, std::vector<nlohmann::json>> processRecords_;  // hello and process heads by source
    std::atomic<uint64_t> errors_{0};
    std::thread thread_;
};

} // namespace memlens::capture
