#pragma once
// Figures about the real snapshots from the independent oracle, tests/tools/snapshot_oracle.py
// (Python's own pickle and plain arithmetic, no memlens code), run at test time: tests compare
// what memlens shows with these instead of numbers typed in.
#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

namespace oracle {

inline std::string shellQuoted(const std::string& s) {
    std::string out = "'";
    for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return out + "'";
}

// A shell command's standard output and its wait status (pclose's; -1: it could not be run),
// through popen (posix_spawn), not fork: clang 14's ThreadSanitizer aborts in its fork handler
// when a threaded Qt test forks, and the tsan preset runs these tests.
struct CommandResult {
    int status = -1;
    std::string output;
};
inline CommandResult runCommand(const std::string& cmd) {
    CommandResult r;
    FILE* p = ::popen(cmd.c_str(), "r");
    if (!p) return r;
    char buf[4096];
    for (size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) r.output.append(buf, n);
    r.status = ::pclose(p);
    return r;
}

// The JSON that `snapshot_oracle.py ARGS...` prints; nullopt when it did not run or failed.
inline std::optional<nlohmann::json> run(const std::vector<std::string>& args) {
    std::string cmd = shellQuoted(MEMLENS_PYTHON) + " " + shellQuoted(MEMLENS_SOURCE_DIR "/tests/tools/snapshot_oracle.py");
    for (const auto& a : args) cmd += " " + shellQuoted(a);
    const CommandResult r = runCommand(cmd);
    if (r.status != 0) return std::nullopt;
    const std::string& out = r.output;
    auto json = nlohmann::json::parse(out, nullptr, false);
    if (json.is_discarded()) return std::nullopt;
    return json;
}

// One trace entry as the oracle reads it, with the totals right after it.
struct Entry {
    int device = 0;
    int64_t index = 0;
    uint64_t size = 0;
    uint64_t liveBytes = 0;      // requested bytes of the live blocks (the timeline's live_bytes)
    uint64_t reservedBytes = 0;  // the segments' bytes
    int frames = 0;
    int leadingNativeFrames = 0;  // the C++ frames above the first Python frame
};

// Every entry of ACTION ("oom", "alloc", ...) in FILE, device by device; nullopt if the oracle failed.
inline std::optional<std::vector<Entry>> entries(const std::string& file, const std::string& action) {
    auto json = run({"entries", file, "--action", action});
    if (!json || !json->is_array()) return std::nullopt;
    std::vector<Entry> out;
    for (const auto& e : *json)
        out.push_back({e.at("device").get<int>(), e.at("index").get<int64_t>(), e.at("size").get<uint64_t>(),
                       e.at("live_bytes").get<uint64_t>(), e.at("reserved_bytes").get<uint64_t>(), e.at("frames").get<int>(),
                       e.at("leading_native_frames").get<int>()});
    return out;
}

} // namespace oracle
