#pragma once
// The socket protocol between a job (the Python agent, or the C++ capture library) and the
// recorder. A Unix stream socket carries frames in both directions:
//
//   16-byte header: "MLS1", u32 JSON length, u64 blob length (little-endian)
//   JSON text (UTF-8 object; "t" names the message)
//   blob (raw bytes: a snapshot pickle, or nothing)
//
// Job -> recorder ("t"):
//   hello      {pid, ppid, argv, cwd, python, agent, version}
//   process    {torch, cuda, devices, allocator_snapshots, snapshots_note, info}   (merged)
//   iteration  {index, phase, start_us, end_us}
//   snapshot   {iteration, trigger, time_us, info} + the pickle bytes as blob
//   sample     {time_us, device, reserved, allocated}
//   marker     {time_us, iteration, name, data}
//   graph_scan {iteration, phase, time_us, partial, scan}   (scan: any JSON, or the blob as JSON text)
//   bye        {reason}
// Recorder -> job:
//   snapshot_request {}   take a snapshot ("request") at the next iteration boundary
//
// Unknown messages are ignored in both directions (newer peers may send more).
#include <nlohmann/json.hpp>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

namespace memlens::capture {

inline constexpr char kFrameMagic[4] = {'M', 'L', 'S', '1'};
inline constexpr size_t kFrameHeaderBytes = 16;
inline constexpr uint32_t kMaxJsonBytes = 64u << 20;
inline constexpr uint64_t kMaxBlobBytes = 64ull << 30;
inline constexpr int kProtocolVersion = 1;

// Environment of a recorded job.
inline constexpr const char* kEnvSocket = "MEMLENS_SOCKET";        // the recorder's socket path
inline constexpr const char* kEnvConfig = "MEMLENS_AGENT_CONFIG";  // JSON: what to capture

class ProtocolError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

struct Message {
    nlohmann::json head;  // an object with "t"
    std::string blob;
    int64_t source = 0;   // which connection (agent process) sent it; 0 for a single writer
    std::string type() const;
};

struct FrameHeader {
    uint32_t jsonBytes = 0;
    uint64_t blobBytes = 0;
};

// Throws ProtocolError for a wrong magic or sizes over the limits.
FrameHeader parseFrameHeader(const char* sixteenBytes);
// The header and JSON text of a frame; the blob follows it on the wire.
std::string encodeFrameStart(const nlohmann::json& head, uint64_t blobBytes);

} // namespace memlens::capture
