#pragma once
// Writes a session file (see SessionData.h). One writer per file, used from one thread at a time.
// Every add*() is its own transaction (a writer killed at any moment loses at most the record
// it was writing), unless calls are grouped with beginBatch()/commitBatch(): the recorder groups
// small records that arrived together, which a kill would lose together. Readers (SessionFile)
// may follow the file while it grows.
#include "memlens/model/SessionData.h"

#include <memory>
#include <string>
#include <string_view>
#include <vector>

struct sqlite3;

namespace memlens::model {

class SessionWriter {
public:
    // Creates PATH, replacing whatever file is there (and its -wal / -shm companions).
    // writerName goes into the file's meta table ("memlens-cli record 0.1.0").
    // Throws SessionError when the file cannot be created.
    SessionWriter(const std::string& path, const std::string& writerName);
    ~SessionWriter();
    SessionWriter(const SessionWriter&) = delete;
    SessionWriter& operator=(const SessionWriter&) = delete;

    const std::string& path() const { return path_; }

    // The process record: the whole record is replaced.
    void setProcess(const SessionProcess& p);
    int64_t addIteration(const SessionIteration& it);
    // Stores the pickle verbatim; fills id, bytes and crc32 of the returned record.
    SessionSnapshot addSnapshot(SessionSnapshot meta, std::string_view pickle);
    void addSamples(const std::vector<DeviceSample>& samples);  // one transaction
    void addMarker(const SessionMarker& m);
    int64_t addGraphScan(const GraphScan& g);

    // Tells readers the writer is alive (meta heartbeat_us).
    void heartbeat(int64_t nowUs);
    // Marks the session finished (readers then report live = false) and folds the write-ahead
    // log back into the file. The writer stays usable.
    void finish(int64_t nowUs);
    void setMeta(const std::string& key, const std::string& value);

    // Groups the add*() calls up to commitBatch() into one transaction (nestable).
    void beginBatch();
    void commitBatch();
    void rollbackBatch();  // drops the whole batch

    // Bytes of a snapshot chunk row; pickles larger than this span several rows.
    static constexpr size_t kChunkBytes = 16u << 20;

private:
    void exec(const char* sql);
    void txBegin();
    void txCommit();
    void txRollback();
    int txDepth_ = 0;
    std::string path_;
    sqlite3* db_ = nullptr;
};

// Current time in microseconds since the epoch.
int64_t sessionNowUs();
// This process's start time in clock ticks since boot (/proc/self/stat field 22), used with the
// pid to tell whether a writer is still alive; 0 when unknown.
uint64_t processStartTicks(int64_t pid);

} // namespace memlens::model
