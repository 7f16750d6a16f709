#include "memlens/model/SessionWriter.h"

#include "SessionSqlite.h"

#include <nlohmann/json.hpp>

#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>

namespace memlens::model {

using sql::Stmt;

int64_t sessionNowUs() {
    using namespace std::chrono;
    return duration_cast<microseconds>(system_clock::now().time_since_epoch()).count();
}

uint64_t processStartTicks(int64_t pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    if (!std::getline(in, line)) return 0;
    auto close = line.rfind(')');  // the command name may hold spaces and parentheses
    if (close == std::string::npos) return 0;
    std::istringstream rest(line.substr(close + 2));
    std::string field;
    // Fields after the name start at 3 (state); starttime is field 22.
    for (int i = 3; i <= 22; ++i)
        if (!(rest >> field)) return 0;
    try {
        return std::stoull(field);
    } catch (...) {
        return 0;
    }
}

namespace sql {

std::string jsonStringArray(const std::vector<std::string>& v) {
    // command lines are bytes: what is not UTF-8 becomes U+FFFD rather than invalid JSON
    return nlohmann::json(v).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::vector<std::string> parseJsonStringArray(std::string_view text) {
    // lenient: the strings of a JSON array; anything else is skipped
    std::vector<std::string> out;
    const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (!j.is_array()) return out;
    for (const auto& e : j)
        if (e.is_string()) out.push_back(e.get<std::string>());
    return out;
}

} // namespace sql

SessionWriter::SessionWriter(const std::string& path, const std::string& writerName) : path_(path) {
    for (const char* suffix : {"", "-wal", "-shm", "-journal"}) {
        std::string p = path + suffix;
        if (::unlink(p.c_str()) != 0 && errno != ENOENT)
            throw SessionError("cannot replace " + p + ": " + std::strerror(errno));
    }
    auto open = [&](const std::string& p, int flags) {
        int rc = sqlite3_open_v2(p.c_str(), &db_, flags | SQLITE_OPEN_NOMUTEX, nullptr);
        if (rc != SQLITE_OK) {
            std::string msg = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
            sqlite3_close(db_);
            db_ = nullptr;
            throw SessionError("cannot create session: " + msg);
        }
        sqlite3_busy_timeout(db_, 5000);
    };
    // The file is made complete (schema, header, meta) under another name and renamed into place,
    // so that a reader never sees a session file without its tables.
    std::string tmp = path + ".creating";
    for (const char* suffix : {"", "-journal"}) ::unlink((tmp + suffix).c_str());
    open(tmp, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
    try {
        // Large pages: snapshots are tens to hundreds of MB of blob pages.
        exec("PRAGMA page_size = 65536");
        exec("BEGIN");
        exec(sql::kSchema);
        exec(("PRAGMA application_id = " + std::to_string(kSessionApplicationId)).c_str());
        exec(("PRAGMA user_version = " + std::to_string(kSessionSchemaVersion)).c_str());
        char host[256] = {};
        ::gethostname(host, sizeof host - 1);
        int64_t now = sessionNowUs();
        {
            Stmt ins(db_, "INSERT INTO meta(key, value) VALUES (?, ?)", "table 'meta'");
            auto put = [&](const char* k, const std::string& v) {
                ins.reset();
                ins.bind(1, std::string_view(k)).bind(2, v).run();
            };
            put("format", "memlens-session");
            put("writer", writerName);
            put("created_us", std::to_string(now));
            put("writer_pid", std::to_string(::getpid()));
            put("writer_host", host);
            put("writer_start_ticks", std::to_string(processStartTicks(::getpid())));
            put("heartbeat_us", std::to_string(now));
            put("finished", "0");
        }
        exec("COMMIT");
        sqlite3_close(db_);
        db_ = nullptr;
        if (std::rename(tmp.c_str(), path.c_str()) != 0)
            throw SessionError("cannot create session: " + std::string(std::strerror(errno)));
        open(path, SQLITE_OPEN_READWRITE);
        exec("PRAGMA journal_mode = WAL");
        exec("PRAGMA synchronous = NORMAL");
        // After a checkpoint the log shrinks back to this size rather than keep a snapshot's size.
        exec("PRAGMA journal_size_limit = 67108864");
    } catch (...) {
        if (db_) sqlite3_close(db_);
        db_ = nullptr;
        ::unlink(tmp.c_str());
        throw;
    }
}

SessionWriter::~SessionWriter() {
    if (db_) sqlite3_close(db_);
}

void SessionWriter::exec(const char* sqlText) {
    char* err = nullptr;
    int rc = sqlite3_exec(db_, sqlText, nullptr, nullptr, &err);
    if (rc != SQLITE_OK) {
        std::string msg = err ? err : sqlite3_errstr(rc);
        sqlite3_free(err);
        throw SessionError("writing session: " + msg);
    }
}

void SessionWriter::setMeta(const std::string& key, const std::string& value) {
    Stmt s(db_, "INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", "writing meta");
    s.bind(1, key).bind(2, value).run();
}

void SessionWriter::setProcess(const SessionProcess& p) {
    Stmt s(db_,
           "INSERT OR REPLACE INTO process(id, pid, host, command, cwd, python, torch, cuda, devices, "
           "allocator_snapshots, snapshots_note, started_us, ended_us, exit_code, exit_signal, info) "
           "VALUES (1, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
           "writing the process record");
    s.bind(1, p.pid).bind(2, p.host).bind(3, sql::jsonStringArray(p.command)).bind(4, p.cwd);
    s.bind(5, p.python).bind(6, p.torch).bind(7, p.cuda).bind(8, p.devicesJson);
    if (p.allocatorSnapshots) s.bind(9, int64_t(*p.allocatorSnapshots));
    else s.bindNull(9);
    s.bind(10, p.snapshotsNote).bind(11, p.startedUs).bind(12, p.endedUs);
    s.bind(13, p.exitCode ? std::optional<int64_t>(*p.exitCode) : std::nullopt);
    s.bind(14, p.exitSignal ? std::optional<int64_t>(*p.exitSignal) : std::nullopt);
    s.bind(15, p.infoJson);
    s.run();
}

int64_t SessionWriter::addIteration(const SessionIteration& it) {
    Stmt s(db_, "INSERT INTO iterations(idx, phase, start_us, end_us) VALUES (?, ?, ?, ?)", "writing an iteration");
    s.bind(1, it.index).bind(2, it.phase).bind(3, it.startUs).bind(4, it.endUs).run();
    return sqlite3_last_insert_rowid(db_);
}

SessionSnapshot SessionWriter::addSnapshot(SessionSnapshot meta, std::string_view pickle) {
    meta.bytes = pickle.size();
    meta.crc32 = crc32Update(0, pickle.data(), pickle.size());
    size_t chunks = (pickle.size() + kChunkBytes - 1) / kChunkBytes;
    txBegin();
    try {
        Stmt s(db_,
               "INSERT INTO snapshots(iteration, trigger, time_us, bytes, crc32, chunks, info) "
               "VALUES (?, ?, ?, ?, ?, ?, ?)",
               "writing a snapshot");
        s.bind(1, meta.iteration).bind(2, meta.trigger).bind(3, meta.timeUs).bind(4, int64_t(meta.bytes));
        s.bind(5, int64_t(meta.crc32)).bind(6, int64_t(chunks)).bind(7, meta.infoJson).run();
        meta.id = sqlite3_last_insert_rowid(db_);
        Stmt c(db_, "INSERT INTO snapshot_chunks(snapshot, seq, data) VALUES (?, ?, ?)", "writing a snapshot");
        for (size_t i = 0; i < chunks; ++i) {
            size_t off = i * kChunkBytes, n = std::min(kChunkBytes, pickle.size() - off);
            c.reset();
            c.bind(1, meta.id).bind(2, int64_t(i)).bindBlobStatic(3, pickle.data() + off, n).run();
        }
        txCommit();
    } catch (...) {
        txRollback();
        throw;
    }
    return meta;
}

void SessionWriter::addSamples(const std::vector<DeviceSample>& samples) {
    if (samples.empty()) return;
    bool tx = samples.size() > 1;
    if (tx) txBegin();
    try {
        Stmt s(db_,
               "INSERT INTO samples(time_us, device, source, process_used, device_used, device_total, reserved, "
               "allocated) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
               "writing a sample");
        for (const auto& d : samples) {
            s.reset();
            s.bind(1, d.timeUs).bind(2, int64_t(d.device)).bind(3, d.source).bind(4, d.processUsed);
            s.bind(5, d.deviceUsed).bind(6, d.deviceTotal).bind(7, d.reserved).bind(8, d.allocated).run();
        }
        if (tx) txCommit();
    } catch (...) {
        if (tx) txRollback();
        throw;
    }
}

void SessionWriter::addMarker(const SessionMarker& m) {
    Stmt s(db_, "INSERT INTO markers(time_us, iteration, name, data) VALUES (?, ?, ?, ?)", "writing a marker");
    s.bind(1, m.timeUs).bind(2, m.iteration).bind(3, m.name).bind(4, m.dataJson).run();
}

int64_t SessionWriter::addGraphScan(const GraphScan& g) {
    Stmt s(db_, "INSERT INTO graph_scans(iteration, phase, time_us, partial, scan) VALUES (?, ?, ?, ?, ?)",
           "writing a graph scan");
    s.bind(1, g.iteration).bind(2, g.phase).bind(3, g.timeUs).bind(4, int64_t(g.partial)).bind(5, g.json).run();
    return sqlite3_last_insert_rowid(db_);
}

void SessionWriter::txBegin() {
    if (txDepth_++ == 0) exec("BEGIN");
}

void SessionWriter::txCommit() {
    if (txDepth_ > 0 && --txDepth_ == 0) exec("COMMIT");
}

void SessionWriter::txRollback() {
    // A failure inside a batch loses the whole batch: it is one transaction.
    if (txDepth_ > 0) {
        txDepth_ = 0;
        sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    }
}

void SessionWriter::beginBatch() { txBegin(); }
void SessionWriter::commitBatch() { txCommit(); }
void SessionWriter::rollbackBatch() { txRollback(); }

void SessionWriter::heartbeat(int64_t nowUs) { setMeta("heartbeat_us", std::to_string(nowUs)); }

void SessionWriter::finish(int64_t nowUs) {
    while (txDepth_ > 0) commitBatch();
    txBegin();
    try {
        setMeta("heartbeat_us", std::to_string(nowUs));
        setMeta("finished", "1");
        txCommit();
    } catch (...) {
        txRollback();
        throw;
    }
    // Fold the log into the file so that the finished session is one file. With a reader still
    // attached this may not complete (no waiting for it); the file stays valid either way.
    sqlite3_busy_timeout(db_, 0);
    sqlite3_exec(db_, "PRAGMA wal_checkpoint(TRUNCATE)", nullptr, nullptr, nullptr);
    sqlite3_exec(db_, "PRAGMA journal_mode = DELETE", nullptr, nullptr, nullptr);
    sqlite3_busy_timeout(db_, 5000);
}

} // namespace memlens::model
