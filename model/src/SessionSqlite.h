#pragma once
// Internal: a thin RAII layer over SQLite for SessionWriter and SessionFile, and the schema.
#include "memlens/model/SessionData.h"

#include <sqlite3.h>

#include <optional>
#include <string>
#include <string_view>

namespace memlens::model::sql {

inline constexpr const char* kSchema = R"SQL(
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE process(
  id INTEGER PRIMARY KEY CHECK (id = 1),
  pid INTEGER, host TEXT, command TEXT, cwd TEXT,
  python TEXT, torch TEXT, cuda TEXT, devices TEXT,
  allocator_snapshots INTEGER, snapshots_note TEXT,
  started_us INTEGER, ended_us INTEGER, exit_code INTEGER, exit_signal INTEGER, info TEXT);
CREATE TABLE iterations(
  id INTEGER PRIMARY KEY, idx INTEGER NOT NULL, phase TEXT NOT NULL,
  start_us INTEGER NOT NULL, end_us INTEGER NOT NULL);
CREATE TABLE snapshots(
  id INTEGER PRIMARY KEY, iteration INTEGER NOT NULL, trigger TEXT NOT NULL, time_us INTEGER NOT NULL,
  bytes INTEGER NOT NULL, crc32 INTEGER NOT NULL, chunks INTEGER NOT NULL, info TEXT);
CREATE TABLE snapshot_chunks(
  snapshot INTEGER NOT NULL, seq INTEGER NOT NULL, data BLOB NOT NULL, PRIMARY KEY (snapshot, seq));
CREATE TABLE samples(
  id INTEGER PRIMARY KEY, time_us INTEGER NOT NULL, device INTEGER NOT NULL, source TEXT NOT NULL,
  process_used INTEGER, device_used INTEGER, device_total INTEGER, reserved INTEGER, allocated INTEGER);
CREATE TABLE markers(
  id INTEGER PRIMARY KEY, time_us INTEGER NOT NULL, iteration INTEGER NOT NULL, name TEXT NOT NULL, data TEXT);
CREATE TABLE graph_scans(
  id INTEGER PRIMARY KEY, iteration INTEGER NOT NULL, phase TEXT, time_us INTEGER NOT NULL,
  partial INTEGER NOT NULL, scan TEXT NOT NULL);
)SQL";

// A one-line description of an SQLite failure; `what` names the part of the file concerned.
inline std::string describe(sqlite3* db, int rc, const std::string& what) {
    int primary = rc & 0xff;
    std::string msg = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    if (primary == SQLITE_NOTADB)
        return "not a memlens session, or its header is damaged (" + msg + ")";
    if (primary == SQLITE_CORRUPT)
        return "damaged session: " + what + " is unreadable (" + msg + ")";
    return what + ": " + msg;
}

[[noreturn]] inline void fail(sqlite3* db, int rc, const std::string& what) {
    throw SessionError(describe(db, rc, what));
}

class Stmt {
public:
    Stmt(sqlite3* db, const char* sqlText, std::string what) : db_(db), what_(std::move(what)) {
        int rc = sqlite3_prepare_v2(db, sqlText, -1, &s_, nullptr);
        if (rc != SQLITE_OK) fail(db, rc, what_);
    }
    ~Stmt() { sqlite3_finalize(s_); }
    Stmt(const Stmt&) = delete;
    Stmt& operator=(const Stmt&) = delete;

    Stmt& bind(int i, int64_t v) { return check(sqlite3_bind_int64(s_, i, v)); }
    Stmt& bind(int i, std::string_view v) {
        return check(sqlite3_bind_text(s_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT));
    }
    Stmt& bind(int i, const std::optional<int64_t>& v) {
        return v ? bind(i, *v) : check(sqlite3_bind_null(s_, i));
    }
    Stmt& bindNull(int i) { return check(sqlite3_bind_null(s_, i)); }
    // The bytes must stay alive until step().
    Stmt& bindBlobStatic(int i, const void* p, size_t n) {
        return check(sqlite3_bind_blob64(s_, i, p, n, SQLITE_STATIC));
    }

    // true: a row is ready; false: done.
    bool step() {
        int rc = sqlite3_step(s_);
        if (rc == SQLITE_ROW) return true;
        if (rc == SQLITE_DONE) return false;
        fail(db_, rc, what_);
    }
    void run() {
        while (step()) {
        }
    }
    void reset() {
        sqlite3_reset(s_);
        sqlite3_clear_bindings(s_);
    }

    bool null(int c) const { return sqlite3_column_type(s_, c) == SQLITE_NULL; }
    int64_t i64(int c) const { return sqlite3_column_int64(s_, c); }
    std::optional<int64_t> opt(int c) const { return null(c) ? std::nullopt : std::optional<int64_t>(i64(c)); }
    std::string text(int c) const {
        const unsigned char* t = sqlite3_column_text(s_, c);
        return t ? std::string(reinterpret_cast<const char*>(t), sqlite3_column_bytes(s_, c)) : std::string();
    }
    std::string_view blob(int c) const {
        const void* p = sqlite3_column_blob(s_, c);
        int n = sqlite3_column_bytes(s_, c);
        return p ? std::string_view(static_cast<const char*>(p), n) : std::string_view();
    }
    sqlite3_stmt* get() { return s_; }

private:
    Stmt& check(int rc) {
        if (rc != SQLITE_OK) fail(db_, rc, what_);
        return *this;
    }
    sqlite3* db_;
    sqlite3_stmt* s_ = nullptr;
    std::string what_;
};

// JSON array text of strings <-> vector (model/ has no JSON library; these are plain strings).
std::string jsonStringArray(const std::vector<std::string>& v);
std::vector<std::string> parseJsonStringArray(std::string_view text);

} // namespace memlens::model::sql
