/* FALLBACK for capture/tests/gpu/run.sh only: the part of SQLite's C API that memlens uses, for
 * a machine that has the SQLite library (libsqlite3.so.0, always there with Python) but not its
 * development header. The declarations and values are SQLite 3's stable ABI (sqlite.org/c3ref).
 * Normal builds use the system's <sqlite3.h> (Debian: libsqlite3-dev). */
#ifndef MEMLENS_FALLBACK_SQLITE3_H
#define MEMLENS_FALLBACK_SQLITE3_H
#define SQLITE_VERSION "3.0.0"
#ifdef __cplusplus
extern "C" {
#endif
typedef struct sqlite3 sqlite3;
typedef struct sqlite3_stmt sqlite3_stmt;
typedef long long sqlite3_int64;
typedef unsigned long long sqlite3_uint64;
typedef void (*sqlite3_destructor_type)(void*);
#define SQLITE_STATIC ((sqlite3_destructor_type)0)
#define SQLITE_TRANSIENT ((sqlite3_destructor_type)-1)
#define SQLITE_OK 0
#define SQLITE_CORRUPT 11
#define SQLITE_NOTADB 26
#define SQLITE_ROW 100
#define SQLITE_DONE 101
#define SQLITE_NULL 5
#define SQLITE_OPEN_READONLY 0x00000001
#define SQLITE_OPEN_READWRITE 0x00000002
#define SQLITE_OPEN_CREATE 0x00000004
#define SQLITE_OPEN_NOMUTEX 0x00008000
int sqlite3_open_v2(const char* filename, sqlite3** db, int flags, const char* vfs);
int sqlite3_close(sqlite3*);
const char* sqlite3_errmsg(sqlite3*);
const char* sqlite3_errstr(int);
int sqlite3_exec(sqlite3*, const char* sql, int (*callback)(void*, int, char**, char**), void*, char** errmsg);
void sqlite3_free(void*);
int sqlite3_busy_timeout(sqlite3*, int ms);
int sqlite3_prepare_v2(sqlite3* db, const char* sql, int nbyte, sqlite3_stmt** stmt, const char** tail);
int sqlite3_finalize(sqlite3_stmt*);
int sqlite3_bind_int64(sqlite3_stmt*, int, sqlite3_int64);
int sqlite3_bind_text(sqlite3_stmt*, int, const char*, int, void (*)(void*));
int sqlite3_bind_null(sqlite3_stmt*, int);
int sqlite3_bind_blob64(sqlite3_stmt*, int, const void*, sqlite3_uint64, void (*)(void*));
int sqlite3_step(sqlite3_stmt*);
int sqlite3_reset(sqlite3_stmt*);
int sqlite3_clear_bindings(sqlite3_stmt*);
int sqlite3_column_type(sqlite3_stmt*, int col);
sqlite3_int64 sqlite3_column_int64(sqlite3_stmt*, int col);
const unsigned char* sqlite3_column_text(sqlite3_stmt*, int col);
const void* sqlite3_column_blob(sqlite3_stmt*, int col);
int sqlite3_column_bytes(sqlite3_stmt*, int col);
sqlite3_int64 sqlite3_last_insert_rowid(sqlite3*);
#ifdef __cplusplus
}
#endif
#endif
