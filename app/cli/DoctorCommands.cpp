// memlens-cli check / diff: the doctor's findings, and the iteration and file diffs.
#include "CliArgs.h"
#include "CommandHelpers.h"
#include "Commands.h"

#include "memlens/model/AllocatorState.h"
#include "memlens/model/ByteFormat.h"
#include "memlens/model/IterationDiff.h"
#include "memlens/model/ParseError.h"
#include "memlens/model/SessionDoctor.h"
#include "memlens/model/SessionFile.h"
#include "memlens/model/SnapshotDoctor.h"
#include "memlens/model/SnapshotReader.h"
#include "memlens/model/StackDiff.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>

namespace memlens::cli {

namespace {

using namespace memlens::model;

bool isSessionFile(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    char head[16] = {};
    in.read(head, sizeof head);
    return in.gcount() == 16 && std::string(head, 16) == std::string("SQLite format 3\0", 16);
}

// A snapshot file, or a session's snapshot to diagnose (the OOM one, else the last).
struct Opened {
    std::unique_ptr<SessionFile> session;
    Snapshot snapshot;
    bool hasSnapshot = false;
    std::optional<std::vector<TimedIteration>> iterations;  // a session's
};

Opened open(const std::string& path) {
    Opened o;
    if (!isSessionFile(path)) {
        o.snapshot = readSnapshotFile(path);
        o.hasSnapshot = true;
        return o;
    }
    o.session = std::make_unique<SessionFile>(path);
    if (const SessionSnapshot* pick = snapshotToDiagnose(*o.session)) {
        o.snapshot = readSessionSnapshot(*o.session, pick->id);
        o.hasSnapshot = true;
    }
    if (std::vector<TimedIteration> timed = timedIterations(*o.session); !timed.empty()) o.iterations = std::move(timed);
    return o;
}

Json framesJson(const std::vector<FindingFrame>& frames) {
    Json out = Json::array();
    for (const FindingFrame& f : frames) out.push_back({{"name", f.name}, {"filename", f.filename}, {"line", f.line}});
    return out;
}

Json optionalJson(const std::optional<uint64_t>& v) { return v ? Json(*v) : Json(nullptr); }

Json findingJson(const Finding& f) {
    Json j{{"rule", f.rule},
           {"severity", severityName(f.severity)},
           {"title", f.title},
           {"device", f.device},
           {"bytes", f.bytes},
           {"per_iteration_bytes", f.perIterationBytes ? Json(static_cast<int64_t>(std::llround(*f.perIterationBytes))) : Json(nullptr)},
           {"since_iteration", f.sinceIteration ? Json(*f.sinceIteration) : Json(nullptr)},
           {"count", f.count},
           {"references", f.references},
           {"frames", framesJson(f.frames)},
           {"evidence", f.evidence},
           {"fix", f.fix},
           {"estimated", f.estimated}};
    if (!f.iterations.empty()) j["iterations"] = f.iterations;
    if (f.oomEntry >= 0) j["oom_entry"] = f.oomEntry;
    return j;
}

Json reportJson(const DoctorReport& r) {
    const DoctorSummary& s = r.summary;
    Json categories = nullptr;
    if (s.hasCategories) {
        categories = Json::object();
        for (int c = 0; c < kMemoryCategoryCount; ++c)
            categories[memoryCategoryName(static_cast<MemoryCategory>(c))] = s.categories.bytes[static_cast<size_t>(c)];
        categories["estimated"] = s.categories.estimated;
    }
    Json findings = Json::array();
    for (const Finding& f : r.findings) findings.push_back(findingJson(f));
    return Json{{"file", r.file},
                {"kind", r.kind},
                {"device", r.device >= 0 ? Json(model::deviceName(r.device)) : Json(nullptr)},
                {"iterations",
                 {{"count", r.iterations.iterations.size()},
                  {"complete", r.iterations.complete()},
                  {"source", iterationSourceName(r.iterations.source)},
                  {"last_incomplete", r.iterations.lastIncomplete},
                  {"note", r.iterations.note}}},
                {"summary",
                 {{"nvidia_smi", s.nvidiaSmi},
                  {"batch_size", s.batchSize},
                  {"reserved_bytes", s.reservedBytes},
                  {"live_bytes", s.liveBytes},
                  {"cached_free_bytes", s.cachedFreeBytes},
                  {"fragmented_bytes", s.fragmentedBytes},
                  {"process_bytes", optionalJson(s.processBytes)},
                  {"first_iteration_peak", optionalJson(s.firstIterationPeak)},
                  {"end_peak", optionalJson(s.endPeak)},
                  {"growth_per_iteration", s.growthPerIteration ? Json(static_cast<int64_t>(std::llround(*s.growthPerIteration))) : Json(nullptr)},
                  {"oom", s.oom},
                  {"categories", categories}}},
                {"findings", std::move(findings)},
                {"notes", r.notes}};
}

void printReport(const DoctorReport& r) {
    std::cout << r.file << ": " << r.kind;
    if (r.device >= 0) std::cout << ", " << model::deviceName(r.device);
    const auto& its = r.iterations;
    if (its.iterations.empty()) std::cout << ", no iterations found";
    else {
        std::cout << ", " << its.iterations.size() << " iterations (" << iterationSourceName(its.source);
        if (its.lastIncomplete) std::cout << "; the last is incomplete";
        std::cout << ")";
    }
    std::cout << "\n";
    if (r.findings.empty()) std::cout << "no findings\n";
    else std::cout << r.findings.size() << (r.findings.size() == 1 ? " finding" : " findings") << ":\n";
    for (const Finding& f : r.findings) {
        std::cout << "\n  " << severityName(f.severity) << " [" << f.rule << "] " << f.title << (f.estimated ? " (estimated)" : "") << "\n";
        std::cout << "    " << f.evidence << "\n";
        for (const std::string& ref : f.references) std::cout << "    held by " << ref << "\n";
        for (size_t i = 0; i < f.frames.size() && i < 6; ++i)
            std::cout << "    " << (i ? "  " : "at ") << f.frames[i].name << " (" << f.frames[i].filename << ":" << f.frames[i].line << ")\n";
        std::cout << "    fix: " << f.fix << "\n";
    }
    std::cout << "\nsummary:\n  " << r.summary.nvidiaSmi << "\n  " << r.summary.batchSize << "\n";
    for (const std::string& n : r.notes) std::cout << "  note: " << n << "\n";
}

std::optional<int> deviceOption(const CliArgs& a, const Snapshot* s) {
    if (!a.has("device")) return std::nullopt;
    if (!s) throw UsageError("--device: the file has no allocator snapshot");
    if (deviceArgument(a) == model::kHostDevice)
        throw UsageError("--device host: the doctor reads GPU memory (stats, timeline and state read the host)");
    return checkDevice(*s, a);
}

} // namespace

int checkCommand(const std::vector<std::string>& args) {
    CliArgs a(args, {"json"}, {"fail-on", "device"});
    const std::string file = oneFile(a, "check");
    Severity failOn = Severity::Warning;
    if (auto v = a.value("fail-on")) {
        auto s = severityFromName(*v);
        if (!s) throw UsageError("--fail-on must be info, warning or error, not '" + *v + "'");
        failOn = *s;
    }
    DoctorReport report;
    try {
        if (isSessionFile(file)) {
            if (a.has("device")) throw UsageError("--device goes with snapshots; a session is diagnosed on its snapshot's device");
            SessionFile session(file);
            report = diagnoseSession(session);
        } else {
            const Snapshot s = readSnapshotFile(file);
            DoctorOptions options;
            if (auto d = deviceOption(a, &s)) options.device = *d;
            report = diagnoseSnapshot(s, options);
        }
    } catch (const SessionError& e) {
        std::cout.flush();
        std::cerr << file << ": " << e.what() << "\n";
        return 1;
    }
    report.file = file;
    if (a.has("json")) printJson(reportJson(report));
    else printReport(report);
    for (const Finding& f : report.findings)
        if (f.severity >= failOn) return 3;
    return 0;
}

namespace {

int64_t iterationNumberArg(const CliArgs& a, const char* name) {
    const auto v = a.value(name);
    if (!v) throw UsageError(std::string("--") + name + " needs an iteration number");
    char* end = nullptr;
    const long long n = std::strtoll(v->c_str(), &end, 10);
    if (!end || *end || v->empty()) throw UsageError(std::string("--") + name + " must be an iteration number, not '" + *v + "'");
    return n;
}

Json groupJson(const Snapshot& s, const SurvivorGroup& g) {
    const std::string where = whereOf(s, g.stack);
    return Json{{"where", where.empty() ? Json(nullptr) : Json(where)},
                {"bytes", g.bytes},
                {"count", g.count},
                {"per_iteration_bytes", static_cast<int64_t>(std::llround(g.bytesPerIteration()))},
                {"first_iteration", g.firstIteration},
                {"last_iteration", g.lastIteration},
                {"iterations_with_survivors", g.iterationsWith},
                {"frames", framesJson(framesOf(s, g.stack))}};
}

int sessionSnapshotDiff(const CliArgs& a, const std::string& file, const SessionFile& session, std::pair<int64_t, int64_t> ids, int device);

// diff FILE --from N --to M: what iterations N..M left alive at the end of M, from the trace (a
// session: the trace of its diagnosed snapshot, else its snapshots of N and M compared).
int iterationDiff(const CliArgs& a, const std::string& file) {
    const int64_t from = iterationNumberArg(a, "from"), to = iterationNumberArg(a, "to");
    if (from > to) throw UsageError("--from must not be after --to");
    Opened o = open(file);
    if (!o.hasSnapshot) throw SessionError("no allocator snapshot in the session: there is no trace to diff");
    const int device = deviceOption(a, &o.snapshot).value_or(doctorDevice(o.snapshot));
    const DeviceData* dd = o.snapshot.device(device);
    if (!dd) throw ParseError(ParseError::kNoOffset, "device_traces", "the snapshot has no device with a trace");
    const IterationSplit split = o.iterations ? iterationsFromTimes(o.snapshot, device, *o.iterations) : splitIterations(o.snapshot, device);
    // a session whose trace does not reach back to FROM: its snapshots of the two iterations
    if (o.session) {
        bool covered = false, coveredTo = false;
        for (const Iteration& it : split.iterations) covered |= it.number == from, coveredTo |= it.number == to;
        if (!(covered && coveredTo))
            if (const auto ids = snapshotsOfIterations(*o.session, from, to)) return sessionSnapshotDiff(a, file, *o.session, *ids, device);
    }
    if (split.iterations.empty()) throw ParseError(ParseError::kNoOffset, "device_traces", "no iterations found in the trace (no annotations, no repeating pattern)");
    auto indexOf = [&](int64_t number, const char* name) {
        for (size_t k = 0; k < split.iterations.size(); ++k)
            if (split.iterations[k].number == number) return k;
        throw ParseError(ParseError::kNoOffset, std::string("--") + name,
                         "no iteration " + std::to_string(number) + " in the trace (it has " +
                             std::to_string(split.iterations.front().number) + " to " + std::to_string(split.iterations.back().number) + ")");
    };
    const size_t i = indexOf(from, "from"), j = indexOf(to, "to");
    const Survivors s = survivorsOf(dd->trace, split.iterations, i, j, split.iterations[j].lastEntry);
    const bool toIncomplete = split.lastIncomplete && j + 1 == split.iterations.size();
    if (a.has("json")) {
        Json groups = Json::array();
        for (const SurvivorGroup& g : s.groups) groups.push_back(groupJson(o.snapshot, g));
        printJson(Json{{"file", file},
                       {"device", model::deviceName(device)},
                       {"from", from},
                       {"to", to},
                       {"iterations_source", iterationSourceName(split.source)},
                       {"to_incomplete", toIncomplete},
                       {"alive_after_entry", s.aliveAfter},
                       {"bytes", s.bytes},
                       {"count", s.count},
                       {"stacks", std::move(groups)}});
        return 0;
    }
    std::cout << file << ": allocations made in iterations " << from << " to " << to << " still alive at the end of iteration " << to
              << (toIncomplete ? " (which the trace cuts off)" : "") << ": " << formatBytes(s.bytes) << " in " << s.count
              << " allocations, " << s.groups.size() << " stacks\n";
    for (size_t k = 0; k < s.groups.size() && k < 50; ++k) {
        const SurvivorGroup& g = s.groups[k];
        const std::string where = whereOf(o.snapshot, g.stack);
        char line[160];
        std::snprintf(line, sizeof line, "  %10s  %6llu  %10s/it  since %lld  ", formatBytes(g.bytes).c_str(),
                      static_cast<unsigned long long>(g.count), formatBytes(static_cast<uint64_t>(std::llround(g.bytesPerIteration()))).c_str(),
                      static_cast<long long>(g.firstIteration));
        std::cout << line << (where.empty() ? "(no stack)" : where) << "\n";
    }
    return 0;
}

// Live bytes by stack of B's final state against A's, as JSON or a table.
int printStackDiff(const CliArgs& a, const std::string& nameA, const Snapshot& sa0, const std::string& nameB, const Snapshot& sb0, int device) {
    if (device < 0 || !sa0.device(device) || !sb0.device(device))
        throw std::runtime_error(nameB + ": no device " + std::to_string(device) + " to compare with");
    const DeviceState sa = finalDeviceState(sa0, device), sb = finalDeviceState(sb0, device);
    const auto deltas = diffLiveByStack(sa0, sa, sb0, sb);
    uint64_t liveA = 0, liveB = 0;
    for (const StackDelta& d : deltas) liveA += d.bytesA, liveB += d.bytesB;
    if (a.has("json")) {
        Json stacks = Json::array();
        for (const StackDelta& d : deltas) {
            if (d.change == StackDelta::Change::Same) continue;
            const Snapshot& s = d.inB ? sb0 : sa0;
            const StackId st = d.inB ? d.stackB : d.stackA;
            const std::string where = whereOf(s, st);
            stacks.push_back({{"change", stackChangeName(d.change)},
                              {"where", where.empty() ? Json(nullptr) : Json(where)},
                              {"bytes_a", d.bytesA},
                              {"bytes_b", d.bytesB},
                              {"delta", d.delta()},
                              {"count_a", d.countA},
                              {"count_b", d.countB},
                              {"frames", framesJson(framesOf(s, st))}});
        }
        printJson(Json{{"a", nameA}, {"b", nameB}, {"device", model::deviceName(device)}, {"live_a", liveA}, {"live_b", liveB},
                       {"delta", static_cast<int64_t>(liveB) - static_cast<int64_t>(liveA)}, {"stacks", std::move(stacks)}});
        return 0;
    }
    std::cout << nameA << " -> " << nameB << " (" << model::deviceName(device) << "): live " << formatBytes(liveA) << " -> " << formatBytes(liveB) << " ("
              << formatSignedBytes(static_cast<int64_t>(liveB) - static_cast<int64_t>(liveA)) << ")\n";
    size_t shown = 0;
    for (const StackDelta& d : deltas) {
        if (d.change == StackDelta::Change::Same || shown++ >= 50) continue;
        const Snapshot& s = d.inB ? sb0 : sa0;
        const std::string where = whereOf(s, d.inB ? d.stackB : d.stackA);
        char line[160];
        std::snprintf(line, sizeof line, "  %-8s  %10s  %10s -> %-10s  ", stackChangeName(d.change), formatSignedBytes(d.delta()).c_str(),
                      formatBytes(d.bytesA).c_str(), formatBytes(d.bytesB).c_str());
        std::cout << line << (where.empty() ? "(no stack)" : where) << "\n";
    }
    return 0;
}

// diff SESSION --from N --to M where the trace does not cover N: the session's snapshots of N and M.
int sessionSnapshotDiff(const CliArgs& a, const std::string& file, const SessionFile& session, std::pair<int64_t, int64_t> ids, int device) {
    const Snapshot sa = readSessionSnapshot(session, ids.first), sb = readSessionSnapshot(session, ids.second);
    return printStackDiff(a, file + "#snapshot" + std::to_string(ids.first), sa, file + "#snapshot" + std::to_string(ids.second), sb, device);
}

int fileDiff(const CliArgs& a, const std::string& fileA, const std::string& fileB) {
    Opened oa = open(fileA);
    if (!oa.hasSnapshot) throw SessionError("no allocator snapshot in the session");
    Opened ob;
    try {
        ob = open(fileB);
    } catch (const ParseError& e) {
        throw std::runtime_error(e.describe(fileB));
    } catch (const SessionError& e) {
        throw std::runtime_error(fileB + ": " + e.what());
    }
    if (!ob.hasSnapshot) throw std::runtime_error(fileB + ": no allocator snapshot in the session");
    const int device = a.has("device") ? *deviceOption(a, &oa.snapshot) : doctorDevice(oa.snapshot);
    return printStackDiff(a, fileA, oa.snapshot, fileB, ob.snapshot, device);
}

} // namespace

int diffCommand(const std::vector<std::string>& args) {
    CliArgs a(args, {"json"}, {"from", "to", "device"});
    const auto& files = a.positional();
    const bool range = a.has("from") || a.has("to");
    if (files.size() == 1 && range) {
        try {
            return iterationDiff(a, files[0]);
        } catch (const SessionError& e) {
            std::cout.flush();
            std::cerr << files[0] << ": " << e.what() << "\n";
            return 1;
        }
    }
    if (files.size() == 2 && !range) {
        try {
            return fileDiff(a, files[0], files[1]);
        } catch (const SessionError& e) {
            std::cout.flush();
            std::cerr << files[0] << ": " << e.what() << "\n";
            return 1;
        }
    }
    throw UsageError("diff takes FILE --from N --to M, or two files A B");
}

} // namespace memlens::cli
