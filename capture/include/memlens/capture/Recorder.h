#pragma once
// memlens-cli record: runs a command with the memlens agent enabled, receives what the agent
// sends on a Unix socket, samples the job's GPU memory through NVML, and writes the session.
//
// The job is started unchanged: the recorder prepends to PYTHONPATH a directory holding a
// sitecustomize.py that starts the agent (and then runs any other sitecustomize), and passes
// the socket path (MEMLENS_SOCKET) and what to capture (MEMLENS_AGENT_CONFIG, JSON). The socket
// lives in a fresh 0700 directory; connections from other users are refused (SO_PEERCRED).
#include "memlens/capture/CaptureConfig.h"

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace memlens::capture {

class RecorderError : public std::runtime_error {
public:
    explicit RecorderError(const std::string& what, int exitStatus = 1)
        : std::runtime_error(what), exitStatus_(exitStatus) {}
    // What memlens-cli exits with: 127 when the command cannot be run (as shells do), else 1.
    int exitStatus() const { return exitStatus_; }

private:
    int exitStatus_;
};

struct RecorderOptions {
    std::string output;
    std::vector<std::string> command;
    CaptureConfig capture;
    int sampleIntervalMs = 500;
    bool quiet = false;
    std::string agentDir;  // empty: findAgentDir()
};

struct RecorderResult {
    int exitStatus = 0;  // the job's: its exit code, or 128 + the signal that ended it
    uint64_t iterations = 0, snapshots = 0, snapshotBytes = 0, samples = 0, markers = 0;
    double snapshotWriteSeconds = 0;
    bool agentConnected = false;
};

// Runs the job to its end. Throws RecorderError when the job cannot be started (nothing was
// run then); every later problem is reported on stderr and the job goes on.
RecorderResult runRecorder(const RecorderOptions& options);

// The directory holding memlens_agent/ and boot/sitecustomize.py: $MEMLENS_AGENT_DIR, else
// share/memlens/python beside the installed binary, else the source tree's capture/python.
std::string findAgentDir();

} // namespace memlens::capture
