#pragma once
// A capture session: one .memlens file written by the recorder (memlens-cli record) or by the C++
// capture library, about one training process. It is an SQLite database (WAL mode) that readers
// may open while it is being written; SessionWriter writes it, SessionFile reads and follows it.
//
// Times are microseconds since the Unix epoch (the clock of PyTorch's trace entries, time_us).
// JSON-valued fields are kept as JSON text: model/ does not parse them.
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace memlens::model {

// Version of the table layout; SessionFile refuses files of any other version.
inline constexpr int kSessionSchemaVersion = 1;
// SQLite's application_id of a session file ("MLSN"); other SQLite files are refused.
inline constexpr int32_t kSessionApplicationId = 0x4D4C534E;

// A session file that cannot be opened, is not a session, or is damaged. what() is one line
// without the file name ("damaged session: table 'iterations' is unreadable (...)").
class SessionError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// The recorded process. Fields the recorder has not learnt yet are empty / nullopt.
struct SessionProcess {
    int64_t pid = 0;
    std::string host;
    std::vector<std::string> command;  // argv
    std::string cwd;
    std::string python;  // versions, e.g. "3.11.2", "2.11.0+cu130", "13.0"; empty: absent/unknown
    std::string torch;
    std::string cuda;
    std::string devicesJson = "[]";  // JSON array of {"index", "name", "total_bytes", ...}
    // Whether allocator snapshots can be taken (CUDA present and history recording enabled);
    // nullopt: not known yet. snapshotsNote says why they are absent.
    std::optional<bool> allocatorSnapshots;
    std::string snapshotsNote;
    int64_t startedUs = 0;  // 0: unknown
    int64_t endedUs = 0;    // 0: still running (or the recorder was killed)
    std::optional<int> exitCode;    // as a shell reports it: the code, or 128 + signal
    std::optional<int> exitSignal;  // the signal that ended it, if one did
    std::string infoJson = "{}";    // anything else, a JSON object
};

struct SessionIteration {
    int64_t index = 0;  // 1-based, one running count over all phases
    std::string phase;  // "train", "eval", "other", or what the job named it
    int64_t startUs = 0;
    int64_t endUs = 0;
};

// Why a snapshot was taken.
namespace trigger {
inline constexpr const char* kIteration = "iteration";
inline constexpr const char* kPeriodic = "periodic";
inline constexpr const char* kOutOfMemory = "oom";
inline constexpr const char* kRequest = "request";
inline constexpr const char* kExit = "exit";
} // namespace trigger

struct SessionSnapshot {
    int64_t id = 0;
    int64_t iteration = 0;  // the iteration it was taken in or at the end of; 0: before the first
    std::string trigger;    // trigger::k*
    int64_t timeUs = 0;
    uint64_t bytes = 0;     // size of the pickle
    uint32_t crc32 = 0;     // CRC-32 (zlib's) of the pickle
    std::string infoJson = "{}";
};

// One reading of one device. Every figure is optional: NVML readings (source "nvml") have the
// process and device figures, the job's own readings (source "torch") the allocator's.
struct DeviceSample {
    int64_t timeUs = 0;
    int device = 0;
    std::string source;
    std::optional<int64_t> processUsed;  // NVML usedGpuMemory of the job's processes
    std::optional<int64_t> deviceUsed;
    std::optional<int64_t> deviceTotal;
    std::optional<int64_t> reserved;   // torch memory_stats reserved_bytes.all.current
    std::optional<int64_t> allocated;  // torch memory_stats allocated_bytes.all.current
};

struct SessionMarker {
    int64_t timeUs = 0;
    int64_t iteration = 0;
    std::string name;
    std::string dataJson = "{}";
};

struct GraphScan {
    int64_t id = 0;
    int64_t iteration = 0;
    std::string phase;
    int64_t timeUs = 0;
    bool partial = false;
    std::string json;  // the scan, a JSON text
};

// CRC-32 with zlib's polynomial; crc32Update(0, data) == zlib.crc32(data).
uint32_t crc32Update(uint32_t crc, const void* data, size_t size);

} // namespace memlens::model
