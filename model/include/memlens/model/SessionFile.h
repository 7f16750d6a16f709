#pragma once
// Reads a session file (see SessionData.h), also while the recorder is still writing it: poll()
// reads the rows added since the last read, so a window can follow a live job.
//
//   SessionFile f(path);                 // throws SessionError: missing, not a session, damaged
//   ... f.iterations(), f.snapshots() ...
//   while (f.live()) { auto u = f.poll(); if (u.any()) redraw(); sleep(); }
//   std::string pickle = f.readSnapshot(id);   // the stored bytes, checksum verified
//
// One SessionFile is used from one thread at a time.
#include "memlens/model/SessionData.h"

#include <cstdint>
#include <string>
#include <vector>

struct sqlite3;

namespace memlens::model {

class SessionFile {
public:
    explicit SessionFile(const std::string& path);
    ~SessionFile();
    SessionFile(SessionFile&& other) noexcept;
    SessionFile& operator=(SessionFile&& other) noexcept;
    SessionFile(const SessionFile&) = delete;
    SessionFile& operator=(const SessionFile&) = delete;

    const std::string& path() const { return path_; }

    // What a poll() brought: rows appended since the previous read (the new ones are at the end
    // of the vectors), and whether the process record or the finished flag changed.
    struct Update {
        size_t iterations = 0, snapshots = 0, samples = 0, markers = 0, graphScans = 0;
        bool process = false;
        bool finished = false;
        bool any() const {
            return iterations || snapshots || samples || markers || graphScans || process || finished;
        }
    };
    // Reads what the writer committed since the last read. Cheap when nothing changed.
    // Throws SessionError if the file became damaged. poll() is apply(fetch()).
    Update poll();

    // poll() in two halves, for a window that reads the file on one thread and polls on another:
    // fetch() does the SQLite reads and changes nothing the accessors return; apply(), on the
    // thread that reads the file, takes the rows in. One fetch() at a time, no apply() while one
    // runs, and each fetched Rows applied once, in order (a Rows holds the rows after the last
    // apply). fetch() also uses the connection: no readSnapshot(), writeSnapshotTo() or check()
    // meanwhile on another thread.
    struct Rows {
        bool changed = false;  // the file changed since the last read; the rest is filled
        int64_t dataVersion = -1;
        int64_t lastIteration = 0, lastSnapshot = 0, lastSample = 0, lastMarker = 0, lastScan = 0;
        bool hasProcess = false;
        SessionProcess process;
        std::vector<SessionIteration> iterations;
        std::vector<SessionSnapshot> snapshots;
        std::vector<DeviceSample> samples;
        std::vector<SessionMarker> markers;
        std::vector<GraphScan> graphScans;
        bool finished = false;
        std::string writer, writerHost;
        int64_t writerPid = 0;
        uint64_t writerStartTicks = 0;
        int64_t heartbeatUs = 0;
    };
    Rows fetch() const;
    Update apply(Rows rows);

    const SessionProcess& process() const { return process_; }
    const std::vector<SessionIteration>& iterations() const { return iterations_; }
    const std::vector<SessionSnapshot>& snapshots() const { return snapshots_; }
    const std::vector<DeviceSample>& samples() const { return samples_; }
    const std::vector<SessionMarker>& markers() const { return markers_; }
    const std::vector<GraphScan>& graphScans() const { return graphScans_; }
    const SessionSnapshot* snapshot(int64_t id) const;

    // The writer marked the session finished.
    bool finished() const { return finished_; }
    // The writer is still writing: not finished, and its process is alive (same host: pid and
    // start time; another host: a heartbeat in the last 30 s).
    bool live() const;
    std::string writer() const { return writer_; }
    // The writer's process (the recorder) and host, as the meta table names them; 0 / "" unknown.
    int64_t writerPid() const { return writerPid_; }
    const std::string& writerHost() const { return writerHost_; }
    int64_t heartbeatUs() const { return heartbeatUs_; }

    // The pickle of snapshot ID exactly as stored; throws SessionError when there is no such
    // snapshot or its bytes are damaged (missing chunk, wrong size or checksum).
    std::string readSnapshot(int64_t id) const;
    // Streams it to a file (large snapshots need no second copy in memory).
    void writeSnapshotTo(int64_t id, const std::string& outPath) const;

    // Full check: SQLite's integrity check and every snapshot's checksum. Returns "" when
    // sound, else a one-line description of the first problem found.
    std::string check() const;

private:
    // Reads every row after the last read into a Rows (changed set).
    Rows readAll() const;
    void readMeta(Rows& r) const;
    void readProcess(Rows& r) const;
    template <class F> void forEachChunk(int64_t id, F&& f) const;

    std::string path_;
    sqlite3* db_ = nullptr;
    int64_t dataVersion_ = -1;
    int64_t lastIteration_ = 0, lastSnapshot_ = 0, lastSample_ = 0, lastMarker_ = 0, lastScan_ = 0;
    SessionProcess process_;
    std::vector<SessionIteration> iterations_;
    std::vector<SessionSnapshot> snapshots_;
    std::vector<DeviceSample> samples_;
    std::vector<SessionMarker> markers_;
    std::vector<GraphScan> graphScans_;
    bool finished_ = false;
    std::string writer_, writerHost_;
    int64_t writerPid_ = 0;
    uint64_t writerStartTicks_ = 0;
    int64_t heartbeatUs_ = 0;
};

} // namespace memlens::model
