#pragma once
// memlens::capture::Session: memory capture for C++ (LibTorch) training programs.
//
//   memlens::capture::Session capture;           // at the start of main()
//   for (...) {
//       ... forward, backward, optimizer.step() ...
//       capture.step();                          // ends an iteration ("train"; or step("eval"))
//   }
//                                                // the destructor finishes the session
//
// Run under `memlens-cli record -- ./train`, it sends what it captures to the recorder (the same
// socket protocol as the Python agent; MEMLENS_SOCKET). Run alone, it writes a session file
// itself (SessionOptions::output, default memlens-PID.memlens in the working directory).
//
// With CUDA (Torch built with CUDA and a device present) it enables the allocator's history
// (torch::cuda::_record_memory_history), takes snapshots (torch::cuda::_memory_snapshot_pickled)
// at the configured iterations, at an out-of-memory error (the allocator's observer, where the
// CUDA headers were available at build time) and at the end. Without CUDA, iterations, markers
// and graph scans are recorded and the session says that snapshots are absent.
//
// Nothing here throws after construction, and nothing blocks the caller on I/O: the socket and
// the file are written by background threads. All member functions are thread-safe.
#include "memlens/capture/CaptureConfig.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

namespace memlens::capture {

struct SessionOptions {
    // The session file written when no recorder is there; empty: memlens-<pid>.memlens.
    std::string output;
    // What to capture when no recorder is there (the recorder's options win when there is one).
    CaptureConfig capture;
    // Connect to a recorder named by MEMLENS_SOCKET (false: always write the file).
    bool useRecorder = true;
    // NVML sampling interval when writing the file (0: no sampling).
    int sampleIntervalMs = 500;
};

class Session {
public:
    explicit Session(SessionOptions options = {});
    ~Session();  // finish()
    Session(const Session&) = delete;
    Session& operator=(const Session&) = delete;

    // Ends the iteration in progress (it started at the previous step(), or when the session
    // started) and starts the next. Takes the snapshot the configuration asks for.
    void step(std::string_view phase = "train");
    // A named point in time in the current iteration, with optional data (a JSON object).
    void marker(std::string_view name, const nlohmann::json& data = nlohmann::json::object());
    // An allocator snapshot now; false without CUDA history or when dropped.
    bool snapshot(std::string_view trigger = "request");
    // A retained-graph scan result (any JSON value).
    void graphScan(const nlohmann::json& scan, bool partial = false, std::string_view phase = {});
    // A `forward` marker (the doctor's evidence) for iteration INDEX (WatchModel.h makes them).
    void forwardMarker(int64_t index, const nlohmann::json& data);
    // Takes the exit snapshot, sends or writes everything, and closes. Idempotent.
    void finish();

    int64_t iteration() const;         // the 1-based index of the iteration in progress
    bool toRecorder() const;           // sending to a recorder (else writing a file)
    std::string destination() const;   // the socket path or the session file
    bool allocatorSnapshots() const;   // CUDA history is being recorded
    std::string snapshotsNote() const; // why not, when not

    // What the capture library was built with: whether its CUDA parts are compiled in.
    static bool builtWithCuda();

    struct Impl;  // implementation detail (Session.cpp)

private:
    std::unique_ptr<Impl> impl_;
};

} // namespace memlens::capture
