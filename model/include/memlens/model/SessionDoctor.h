#pragma once
// The doctor's rules on a session: exact evidence from what the agent recorded (graph scans,
// `forward` and `kept` markers; capture/README.md, "What the doctor records"), and the snapshot
// rules (SnapshotDoctor.h) on the session's last allocator snapshot with the session's iterations.
#include "memlens/model/Finding.h"
#include "memlens/model/SessionFile.h"
#include "memlens/model/SnapshotDoctor.h"

#include <optional>
#include <utility>

namespace memlens::model {

// One `forward` marker: the top-level module's call, once per iteration.
struct ForwardRecord {
    int64_t iteration = 0;
    int64_t timeUs = 0;
    std::string module;
    bool training = true;
    bool gradEnabled = true;
    bool inferenceMode = false;
    bool outputRequiresGrad = false;
    uint64_t outputBytes = 0;
    uint64_t savedBytes = 0;
    std::string device;
    uint64_t gradsCount = 0, gradsBytes = 0;   // parameters with .grad at forward start
    uint64_t paramsCount = 0, paramsBytes = 0;
    uint64_t inputBytes = 0;                   // all input tensors
    std::vector<std::vector<int64_t>> inputShapes;
    uint64_t previousCount = 0, previousBytes = 0;  // last iteration's inputs still alive
    std::vector<std::string> previousReferences;
};

// One group of a `kept` marker: tensors without a graph held in a container on the device.
struct KeptRecord {
    int64_t iteration = 0;
    std::string pattern;
    uint64_t count = 0, bytes = 0;
    std::string device;
    std::string container;  // "list", "dict", "deque", ...: a dict keyed by step is a cache (growth)
    std::string trigger;    // the scan's: "iteration" (at a boundary), "exit", "request"
};

std::vector<ForwardRecord> forwardRecords(const std::vector<SessionMarker>& markers);
std::vector<KeptRecord> keptRecords(const std::vector<SessionMarker>& markers);

// The snapshot the doctor diagnoses: the last out-of-memory one, else the last; null when none.
const SessionSnapshot* snapshotToDiagnose(const SessionFile& session);
// A stored snapshot, read (throws SessionError / ParseError).
Snapshot readSessionSnapshot(const SessionFile& session, int64_t id);
// The session's iterations as time ranges, for the snapshot rules (iterationsFromTimes).
std::vector<TimedIteration> timedIterations(const SessionFile& session);

// The session's snapshots taken in (or at the end of) iterations FROM and TO: the last of each,
// by id; nullopt when either iteration has none. For the diff between two snapshots of a session.
std::optional<std::pair<int64_t, int64_t>> snapshotsOfIterations(const SessionFile& session, int64_t from, int64_t to);

// The rules that need the agent's records; the snapshot given (may be null) is the one the
// snapshot rules ran on, for the summary.
std::vector<Finding> sessionFindings(const SessionFile& session);

// Everything: agent rules, snapshot rules on the last snapshot (the out-of-memory one first),
// the summary. Throws SessionError / ParseError on damaged files.
DoctorReport diagnoseSession(const SessionFile& session, const std::atomic<bool>* cancel = nullptr);
// The same on a snapshot of the session already read (the window's); null: the agent's records
// only. options.iterations is filled from the session.
DoctorReport diagnoseSession(const SessionFile& session, const Snapshot* snapshot, DoctorOptions options);

} // namespace memlens::model
