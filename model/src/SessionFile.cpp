#include "memlens/model/SessionFile.h"

#include "memlens/model/SessionWriter.h"

#include "SessionSqlite.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fstream>

namespace memlens::model {

using sql::Stmt;

namespace {

constexpr char kSqliteMagic[16] = {'S', 'Q', 'L', 'i', 't', 'e', ' ', 'f', 'o', 'r', 'm', 'a', 't', ' ', '3', '\0'};

int64_t fileSize(const std::string& p) {
    struct stat st {};
    return ::stat(p.c_str(), &st) == 0 ? static_cast<int64_t>(st.st_size) : -1;
}

int64_t pragmaInt(sqlite3* db, const char* pragma, const std::string& what) {
    Stmt s(db, pragma, what);
    return s.step() ? s.i64(0) : 0;
}

} // namespace

SessionFile::SessionFile(const std::string& path) : path_(path) {
    // Check the header ourselves: SQLite's own message for a damaged one is less precise.
    {
        std::ifstream in(path, std::ios::binary);
        if (!in) throw SessionError(std::string("cannot open: ") + std::strerror(errno));
        char head[100] = {};
        in.read(head, sizeof head);
        std::streamsize got = in.gcount();
        if (got == 0) throw SessionError("not a memlens session: the file is empty");
        if (got < 100 || std::memcmp(head, kSqliteMagic, sizeof kSqliteMagic) != 0)
            throw SessionError("not a memlens session, or its header is damaged: "
                               "the first bytes are not an SQLite database header");
        // A truncated file: the header's page count (valid when its version-valid-for number
        // equals the change counter) says more than the file holds. With a non-empty
        // write-ahead log the file may legitimately be shorter, so only without one.
        auto be = [&](int at, int n) {
            uint64_t v = 0;
            for (int i = 0; i < n; ++i) v = (v << 8) | static_cast<unsigned char>(head[at + i]);
            return v;
        };
        uint64_t pageSize = be(16, 2) == 1 ? 65536 : be(16, 2);
        uint64_t pages = be(28, 4);
        bool countValid = be(92, 4) == be(24, 4);
        int64_t have = fileSize(path);
        if (countValid && pages > 0 && pageSize >= 512 && fileSize(path + "-wal") <= 0 && have >= 0 &&
            static_cast<uint64_t>(have) < pages * pageSize)
            throw SessionError("damaged session: the file is truncated (" + std::to_string(have) + " of " +
                               std::to_string(pages * pageSize) + " bytes)");
    }
    int rc = sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, nullptr);
    if (rc != SQLITE_OK) {
        std::string msg = sql::describe(db_, rc, "cannot open");
        sqlite3_close(db_);
        db_ = nullptr;
        throw SessionError(msg);
    }
    try {
        sqlite3_busy_timeout(db_, 2000);
        int64_t appId = pragmaInt(db_, "PRAGMA application_id", "the file header");
        int64_t version = pragmaInt(db_, "PRAGMA user_version", "the file header");
        if (appId != kSessionApplicationId) {
            bool hasMeta = false;
            {
                Stmt s(db_, "SELECT 1 FROM sqlite_master WHERE name = 'meta'", "the table list");
                hasMeta = s.step();
            }
            if (appId == 0 && version == 0 && !hasMeta)
                throw SessionError("not a memlens session: an SQLite database without session tables");
            char buf[32];
            std::snprintf(buf, sizeof buf, "0x%08llx", static_cast<unsigned long long>(appId & 0xffffffff));
            throw SessionError(std::string("not a memlens session: SQLite application id ") + buf);
        }
        if (version != kSessionSchemaVersion)
            throw SessionError("session schema version " + std::to_string(version) +
                               " is not supported (this memlens reads version " +
                               std::to_string(kSessionSchemaVersion) + ")");
        apply(readAll());
    } catch (...) {
        sqlite3_close(db_);
        db_ = nullptr;
        throw;
    }
}

SessionFile::~SessionFile() {
    if (db_) sqlite3_close(db_);
}

SessionFile::SessionFile(SessionFile&& o) noexcept { *this = std::move(o); }

SessionFile& SessionFile::operator=(SessionFile&& o) noexcept {
    if (this == &o) return *this;
    if (db_) sqlite3_close(db_);
    path_ = std::move(o.path_);
    db_ = o.db_;
    o.db_ = nullptr;
    dataVersion_ = o.dataVersion_;
    lastIteration_ = o.lastIteration_;
    lastSnapshot_ = o.lastSnapshot_;
    lastSample_ = o.lastSample_;
    lastMarker_ = o.lastMarker_;
    lastScan_ = o.lastScan_;
    process_ = std::move(o.process_);
    iterations_ = std::move(o.iterations_);
    snapshots_ = std::move(o.snapshots_);
    samples_ = std::move(o.samples_);
    markers_ = std::move(o.markers_);
    graphScans_ = std::move(o.graphScans_);
    finished_ = o.finished_;
    writer_ = std::move(o.writer_);
    writerHost_ = std::move(o.writerHost_);
    writerPid_ = o.writerPid_;
    writerStartTicks_ = o.writerStartTicks_;
    heartbeatUs_ = o.heartbeatUs_;
    return *this;
}

SessionFile::Rows SessionFile::readAll() const {
    Rows r;
    r.changed = true;
    r.lastIteration = lastIteration_;
    r.lastSnapshot = lastSnapshot_;
    r.lastSample = lastSample_;
    r.lastMarker = lastMarker_;
    r.lastScan = lastScan_;
    r.finished = finished_;
    r.writer = writer_;
    r.writerHost = writerHost_;
    r.writerPid = writerPid_;
    r.writerStartTicks = writerStartTicks_;
    r.heartbeatUs = heartbeatUs_;
    // One read transaction: every table as of the same commit.
    Stmt(db_, "BEGIN", "reading the session").run();
    struct End {
        sqlite3* db;
        ~End() { sqlite3_exec(db, "COMMIT", nullptr, nullptr, nullptr); }
    } end{db_};
    r.dataVersion = pragmaInt(db_, "PRAGMA data_version", "the file header");
    readMeta(r);
    readProcess(r);
    {
        Stmt s(db_, "SELECT id, idx, phase, start_us, end_us FROM iterations WHERE id > ? ORDER BY id",
               "table 'iterations'");
        s.bind(1, r.lastIteration);
        while (s.step()) {
            r.lastIteration = s.i64(0);
            r.iterations.push_back({s.i64(1), s.text(2), s.i64(3), s.i64(4)});
        }
    }
    {
        Stmt s(db_,
               "SELECT id, iteration, trigger, time_us, bytes, crc32, info FROM snapshots WHERE id > ? ORDER BY id",
               "table 'snapshots'");
        s.bind(1, r.lastSnapshot);
        while (s.step()) {
            r.lastSnapshot = s.i64(0);
            SessionSnapshot snap;
            snap.id = s.i64(0);
            snap.iteration = s.i64(1);
            snap.trigger = s.text(2);
            snap.timeUs = s.i64(3);
            snap.bytes = static_cast<uint64_t>(s.i64(4));
            snap.crc32 = static_cast<uint32_t>(s.i64(5));
            snap.infoJson = s.null(6) ? "{}" : s.text(6);
            r.snapshots.push_back(std::move(snap));
        }
    }
    {
        Stmt s(db_,
               "SELECT id, time_us, device, source, process_used, device_used, device_total, reserved, allocated "
               "FROM samples WHERE id > ? ORDER BY id",
               "table 'samples'");
        s.bind(1, r.lastSample);
        while (s.step()) {
            r.lastSample = s.i64(0);
            DeviceSample d;
            d.timeUs = s.i64(1);
            d.device = static_cast<int>(s.i64(2));
            d.source = s.text(3);
            d.processUsed = s.opt(4);
            d.deviceUsed = s.opt(5);
            d.deviceTotal = s.opt(6);
            d.reserved = s.opt(7);
            d.allocated = s.opt(8);
            r.samples.push_back(std::move(d));
        }
    }
    {
        Stmt s(db_, "SELECT id, time_us, iteration, name, data FROM markers WHERE id > ? ORDER BY id",
               "table 'markers'");
        s.bind(1, r.lastMarker);
        while (s.step()) {
            r.lastMarker = s.i64(0);
            r.markers.push_back({s.i64(1), s.i64(2), s.text(3), s.null(4) ? "{}" : s.text(4)});
        }
    }
    {
        Stmt s(db_,
               "SELECT id, iteration, phase, time_us, partial, scan FROM graph_scans WHERE id > ? ORDER BY id",
               "table 'graph_scans'");
        s.bind(1, r.lastScan);
        while (s.step()) {
            r.lastScan = s.i64(0);
            r.graphScans.push_back({s.i64(0), s.i64(1), s.text(2), s.i64(3), s.i64(4) != 0, s.text(5)});
        }
    }
    return r;
}

void SessionFile::readMeta(Rows& r) const {
    Stmt s(db_, "SELECT key, value FROM meta", "table 'meta'");
    bool sawFormat = false;
    while (s.step()) {
        std::string k = s.text(0), v = s.text(1);
        auto num = [&]() -> int64_t {
            try {
                return std::stoll(v);
            } catch (...) {
                return 0;
            }
        };
        if (k == "format") sawFormat = v == "memlens-session";
        else if (k == "writer") r.writer = v;
        else if (k == "writer_host") r.writerHost = v;
        else if (k == "writer_pid") r.writerPid = num();
        else if (k == "writer_start_ticks") r.writerStartTicks = static_cast<uint64_t>(num());
        else if (k == "heartbeat_us") r.heartbeatUs = num();
        else if (k == "finished") r.finished = v == "1";
    }
    if (!sawFormat) throw SessionError("damaged session: table 'meta' lacks the format record");
}

void SessionFile::readProcess(Rows& r) const {
    Stmt s(db_,
           "SELECT pid, host, command, cwd, python, torch, cuda, devices, allocator_snapshots, snapshots_note, "
           "started_us, ended_us, exit_code, exit_signal, info FROM process WHERE id = 1",
           "table 'process'");
    if (!s.step()) return;  // not written yet
    SessionProcess p;
    p.pid = s.i64(0);
    p.host = s.text(1);
    p.command = sql::parseJsonStringArray(s.text(2));
    p.cwd = s.text(3);
    p.python = s.text(4);
    p.torch = s.text(5);
    p.cuda = s.text(6);
    p.devicesJson = s.null(7) ? "[]" : s.text(7);
    if (!s.null(8)) p.allocatorSnapshots = s.i64(8) != 0;
    p.snapshotsNote = s.text(9);
    p.startedUs = s.i64(10);
    p.endedUs = s.i64(11);
    if (!s.null(12)) p.exitCode = static_cast<int>(s.i64(12));
    if (!s.null(13)) p.exitSignal = static_cast<int>(s.i64(13));
    p.infoJson = s.null(14) ? "{}" : s.text(14);
    r.process = std::move(p);
    r.hasProcess = true;
}

SessionFile::Update SessionFile::poll() { return apply(fetch()); }

SessionFile::Rows SessionFile::fetch() const {
    if (pragmaInt(db_, "PRAGMA data_version", "the file header") == dataVersion_) return {};
    return readAll();
}

SessionFile::Update SessionFile::apply(Rows r) {
    if (!r.changed) return {};
    Update u;
    u.iterations = r.iterations.size();
    u.snapshots = r.snapshots.size();
    u.samples = r.samples.size();
    u.markers = r.markers.size();
    u.graphScans = r.graphScans.size();
    auto append = [](auto& to, auto& from) {
        if (to.empty()) to = std::move(from);
        else to.insert(to.end(), std::make_move_iterator(from.begin()), std::make_move_iterator(from.end()));
    };
    append(iterations_, r.iterations);
    append(snapshots_, r.snapshots);
    append(samples_, r.samples);
    append(markers_, r.markers);
    append(graphScans_, r.graphScans);
    dataVersion_ = r.dataVersion;
    lastIteration_ = r.lastIteration;
    lastSnapshot_ = r.lastSnapshot;
    lastSample_ = r.lastSample;
    lastMarker_ = r.lastMarker;
    lastScan_ = r.lastScan;
    if (r.hasProcess) {
        const SessionProcess& a = process_;
        const SessionProcess& b = r.process;
        u.process = a.pid != b.pid || a.command != b.command || a.torch != b.torch || a.cuda != b.cuda ||
                    a.python != b.python || a.devicesJson != b.devicesJson ||
                    a.allocatorSnapshots != b.allocatorSnapshots || a.snapshotsNote != b.snapshotsNote ||
                    a.endedUs != b.endedUs || a.exitCode != b.exitCode || a.infoJson != b.infoJson ||
                    a.startedUs != b.startedUs || a.host != b.host;
        process_ = std::move(r.process);
    }
    u.finished = finished_ != r.finished;
    finished_ = r.finished;
    writer_ = std::move(r.writer);
    writerHost_ = std::move(r.writerHost);
    writerPid_ = r.writerPid;
    writerStartTicks_ = r.writerStartTicks;
    heartbeatUs_ = r.heartbeatUs;
    return u;
}

const SessionSnapshot* SessionFile::snapshot(int64_t id) const {
    for (const auto& s : snapshots_)
        if (s.id == id) return &s;
    return nullptr;
}

bool SessionFile::live() const {
    if (finished_) return false;
    char host[256] = {};
    ::gethostname(host, sizeof host - 1);
    if (writerHost_ == host && writerPid_ > 0) {
        if (::kill(static_cast<pid_t>(writerPid_), 0) != 0 && errno != EPERM) return false;
        uint64_t ticks = processStartTicks(writerPid_);
        return writerStartTicks_ == 0 || ticks == 0 || ticks == writerStartTicks_;
    }
    return sessionNowUs() - heartbeatUs_ < 30'000'000;
}

template <class F>
void SessionFile::forEachChunk(int64_t id, F&& f) const {
    const SessionSnapshot* meta = snapshot(id);
    if (!meta) throw SessionError("no snapshot " + std::to_string(id) + " in this session");
    std::string what = "snapshot " + std::to_string(id);
    Stmt s(db_, "SELECT seq, data FROM snapshot_chunks WHERE snapshot = ? ORDER BY seq", what);
    s.bind(1, id);
    int64_t expect = 0;
    uint64_t total = 0;
    uint32_t crc = 0;
    while (s.step()) {
        if (s.i64(0) != expect) throw SessionError("damaged session: " + what + " lacks part " + std::to_string(expect));
        ++expect;
        std::string_view b = s.blob(1);
        total += b.size();
        if (total > meta->bytes) break;
        crc = crc32Update(crc, b.data(), b.size());
        f(b);
    }
    if (total != meta->bytes)
        throw SessionError("damaged session: " + what + " has " + std::to_string(total) + " bytes, expected " +
                           std::to_string(meta->bytes));
    if (crc != meta->crc32) throw SessionError("damaged session: " + what + " fails its checksum");
}

std::string SessionFile::readSnapshot(int64_t id) const {
    std::string out;
    if (const SessionSnapshot* m = snapshot(id)) out.reserve(m->bytes);
    forEachChunk(id, [&](std::string_view b) { out.append(b); });
    return out;
}

void SessionFile::writeSnapshotTo(int64_t id, const std::string& outPath) const {
    std::string tmp = outPath + ".part";
    {
        std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
        if (!out) throw SessionError("cannot write " + outPath + ": " + std::strerror(errno));
        try {
            forEachChunk(id, [&](std::string_view b) { out.write(b.data(), static_cast<std::streamsize>(b.size())); });
        } catch (...) {
            out.close();
            std::remove(tmp.c_str());
            throw;
        }
        out.flush();
        if (!out) {
            std::remove(tmp.c_str());
            throw SessionError("cannot write " + outPath + ": " + std::strerror(errno));
        }
    }
    if (std::rename(tmp.c_str(), outPath.c_str()) != 0) {
        std::string err = std::strerror(errno);
        std::remove(tmp.c_str());
        throw SessionError("cannot write " + outPath + ": " + err);
    }
}

std::string SessionFile::check() const {
    try {
        Stmt s(db_, "PRAGMA integrity_check", "the integrity check");
        if (s.step()) {
            std::string r = s.text(0);
            if (r != "ok") return "damaged session: " + r;
        }
        for (const auto& snap : snapshots_) forEachChunk(snap.id, [](std::string_view) {});
    } catch (const SessionError& e) {
        return e.what();
    }
    return {};
}

} // namespace memlens::model
