#pragma once
// memlens-cli attach PID: records a Python training job that was started without memlens, from
// the attach on, into a session exactly as memlens-cli record does (capture/README.md).
//
// The agent is injected into the running interpreter: with sys.remote_exec on Python 3.14 and
// later (PEP 768), through the debugger (gdb) on Python 3.8 to 3.13, which queues a pending
// call (Py_AddPendingCall) that the interpreter runs on its main thread at its next safe point,
// with the GIL held. The call imports the agent (memlens_agent/_attach.py), which connects to
// this recorder's socket. Until it does, nothing of memlens runs in the job; if it never does,
// the pending call finds no socket and returns without a trace.
//
// Ends when the job exits (the session is complete, exit snapshot and graph scan included) or
// detaches on SIGINT, SIGTERM, SIGHUP or after `duration`: the agent takes a last snapshot and
// graph scan, removes its hooks and the allocator history it turned on, and the job goes on.
#include "memlens/capture/CaptureConfig.h"
#include "memlens/capture/Recorder.h"

#include <cstdint>
#include <string>

namespace memlens::capture {

struct AttachOptions {
    int64_t pid = 0;
    std::string output;
    CaptureConfig capture;
    int sampleIntervalMs = 500;
    double durationSeconds = 0;  // 0: until the job exits or a signal
    double startTimeoutSeconds = 30;  // for the job to run the agent
    bool quiet = false;
    std::string agentDir;  // empty: findAgentDir()
};

// Throws RecorderError (exit status 1) with a one-line reason when it cannot attach: no such
// process, not Python, torch not imported, no permission, the debugger missing, another agent.
// The result's exitStatus is 0: the job's own status is not known to a process that is not its
// parent.
RecorderResult runAttach(const AttachOptions& options);

} // namespace memlens::capture
