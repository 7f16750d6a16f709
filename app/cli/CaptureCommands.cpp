// memlens-cli record / session / export: capturing a training job into a session file, and
// reading one (see capture/README.md).
#include "CliArgs.h"
#include "Commands.h"

#include "memlens/capture/Attach.h"
#include "memlens/capture/Recorder.h"
#include "memlens/model/SessionFile.h"

#include <nlohmann/json.hpp>

#include <charconv>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <map>
#include <thread>

namespace memlens::cli {

using Json = nlohmann::ordered_json;
using model::SessionError;
using model::SessionFile;

namespace {

Json parsedOr(const std::string& text, Json fallback) {
    Json j = Json::parse(text, nullptr, false);
    return j.is_discarded() ? fallback : j;
}

std::string mb(uint64_t b) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f MB", b / 1e6);
    return buf;
}

std::string shortCommand(const std::vector<std::string>& c) {
    std::string s;
    for (const auto& a : c) s += (s.empty() ? "" : " ") + a;
    return s.size() > 120 ? s.substr(0, 117) + "..." : s;
}

Json processJson(const model::SessionProcess& p) {
    Json j;
    j["pid"] = p.pid;
    j["host"] = p.host;
    j["command"] = p.command;
    j["cwd"] = p.cwd;
    j["python"] = p.python;
    j["torch"] = p.torch;
    j["cuda"] = p.cuda;
    j["devices"] = parsedOr(p.devicesJson, Json::array());
    j["allocator_snapshots"] = p.allocatorSnapshots ? Json(*p.allocatorSnapshots) : Json(nullptr);
    j["snapshots_note"] = p.snapshotsNote;
    j["started_us"] = p.startedUs;
    j["ended_us"] = p.endedUs ? Json(p.endedUs) : Json(nullptr);
    j["exit_code"] = p.exitCode ? Json(*p.exitCode) : Json(nullptr);
    j["exit_signal"] = p.exitSignal ? Json(*p.exitSignal) : Json(nullptr);
    j["info"] = parsedOr(p.infoJson, Json::object());
    return j;
}

void printIteration(const model::SessionIteration& it) {
    std::cout << "iteration " << it.index << " " << it.phase << " "
              << (it.endUs - it.startUs) / 1000.0 << " ms\n";
}

void printSnapshot(const model::SessionSnapshot& s) {
    std::cout << "snapshot " << s.id << ": iteration " << s.iteration << ", " << s.trigger << ", " << mb(s.bytes)
              << "\n";
}

int printSummary(const SessionFile& f, const std::string& file) {
    const auto& p = f.process();
    std::cout << file << ": " << (f.live() ? "live (being recorded)" : f.finished() ? "finished" : "ended without finishing")
              << "\n";
    std::cout << "process " << p.pid << (p.host.empty() ? "" : " on " + p.host) << ": " << shortCommand(p.command);
    if (p.exitCode) std::cout << " (exit " << *p.exitCode << ")";
    std::cout << "\n";
    std::cout << "python " << (p.python.empty() ? "-" : p.python) << ", torch " << (p.torch.empty() ? "-" : p.torch)
              << ", CUDA " << (p.cuda.empty() ? "-" : p.cuda) << "\n";
    std::cout << "allocator snapshots: "
              << (!p.allocatorSnapshots ? "unknown yet" : *p.allocatorSnapshots ? "yes" : "no")
              << (p.snapshotsNote.empty() ? "" : " (" + p.snapshotsNote + ")") << "\n";
    std::map<std::string, int> phases;
    for (const auto& it : f.iterations()) ++phases[it.phase];
    std::cout << "iterations: " << f.iterations().size();
    if (!phases.empty()) {
        std::cout << " (";
        bool first = true;
        for (auto& [k, v] : phases) {
            std::cout << (first ? "" : ", ") << k << " " << v;
            first = false;
        }
        std::cout << ")";
    }
    std::cout << "\nsnapshots: " << f.snapshots().size() << "\n";
    for (const auto& s : f.snapshots()) {
        std::cout << "  ";
        printSnapshot(s);
    }
    std::cout << "samples: " << f.samples().size() << ", markers: " << f.markers().size()
              << ", graph scans: " << f.graphScans().size() << "\n";
    return 0;
}

// The options record and attach share: what the agent captures, and NVML's interval.
const std::set<std::string> kCaptureValued = {"snapshot-every", "snapshot-iterations", "snapshot-period", "max-entries",
                                              "stacks", "stack-depth", "sample-interval", "agent-config"};
const std::set<std::string> kCaptureFlags = {"no-exit-snapshot", "no-oom-snapshot", "quiet", "manual-steps"};

void parseCaptureOptions(const CliArgs& a, capture::CaptureConfig& c, int& sampleIntervalMs) {
    c.snapshotEvery = a.integer("snapshot-every", 0);
    if (c.snapshotEvery < 0) throw UsageError("--snapshot-every must be 0 or more");
    if (auto v = a.value("snapshot-iterations")) {
        try {
            c.snapshotIterations = capture::parseIterationList(*v);
        } catch (const std::invalid_argument& e) {
            throw UsageError(std::string("--snapshot-iterations: ") + e.what());
        }
    }
    if (auto v = a.value("snapshot-period")) {
        try {
            size_t used = 0;
            c.snapshotPeriodSeconds = std::stod(*v, &used);
            if (used != v->size() || c.snapshotPeriodSeconds < 0) throw std::invalid_argument("");
        } catch (const std::exception&) {
            throw UsageError("--snapshot-period needs seconds, got '" + *v + "'");
        }
    }
    c.maxEntries = a.integer("max-entries", 100000);
    if (c.maxEntries < 1) throw UsageError("--max-entries must be at least 1");
    c.stacks = a.value("stacks").value_or("default");
    if (c.stacks != "python" && c.stacks != "all" && c.stacks != "none" &&
        c.stacks != "default")
        throw UsageError("--stacks is python, all or none");
    if (auto v = a.value("stack-depth")) {
        // The innermost N frames of every stack are kept; without the option, all of them.
        long long n = 0;
        auto r = std::from_chars(v->data(), v->data() + v->size(), n);
        if (v->empty() || r.ec != std::errc() || r.ptr != v->data() + v->size() || n < 1)
            throw UsageError("--stack-depth needs a number of frames, 1 or more, got '" + *v + "'");
        c.stackDepth = n;
    }
    c.exitSnapshot = !a.has("no-exit-snapshot");
    c.oomSnapshot = !a.has("no-oom-snapshot");
    c.manualSteps = a.has("manual-steps");
    if (auto v = a.value("agent-config")) {
        auto j = nlohmann::json::parse(*v, nullptr, false);
        if (!j.is_object()) throw UsageError("--agent-config needs a JSON object, got '" + *v + "'");
        c.agentExtra = j;
    }
    sampleIntervalMs = static_cast<int>(a.integer("sample-interval", 500));
    if (sampleIntervalMs < 10) throw UsageError("--sample-interval is at least 10 (milliseconds)");
}

} // namespace

int recordCommand(const std::vector<std::string>& args) {
    // Options up to "--" or the first word that is not an option; the rest is the command.
    std::set<std::string> valued = kCaptureValued, flags = kCaptureFlags;
    valued.insert("output");
    std::vector<std::string> mine, command;
    size_t i = 0;
    for (; i < args.size(); ++i) {
        const std::string& a = args[i];
        if (a == "--") {
            ++i;
            break;
        }
        if (a == "-o") {
            mine.push_back(a);
            if (i + 1 < args.size()) mine.push_back(args[++i]);
            continue;
        }
        if (a.rfind("--", 0) != 0) break;
        mine.push_back(a);
        std::string name = a.substr(2);
        if (valued.count(name) && name.find('=') == std::string::npos && i + 1 < args.size()) mine.push_back(args[++i]);
    }
    command.assign(args.begin() + static_cast<long>(i), args.end());
    CliArgs a(mine, flags, valued);
    if (!a.positional().empty()) throw UsageError("record: unexpected '" + a.positional()[0] + "'");
    if (command.empty()) throw UsageError("record needs a command: memlens-cli record [-o FILE] -- COMMAND...");

    capture::RecorderOptions o;
    o.command = command;
    if (auto v = a.value("output")) {
        o.output = *v;
    } else {
        char buf[64];
        std::time_t t = std::time(nullptr);
        std::strftime(buf, sizeof buf, "memlens-%Y%m%d-%H%M%S.memlens", std::localtime(&t));
        o.output = buf;
    }
    parseCaptureOptions(a, o.capture, o.sampleIntervalMs);
    o.quiet = a.has("quiet");
    try {
        return capture::runRecorder(o).exitStatus;
    } catch (const capture::RecorderError& e) {
        std::cerr << "memlens-cli: " << e.what() << "\n";
        return e.exitStatus();
    }
}

int attachCommand(const std::vector<std::string>& args) {
    std::set<std::string> valued = kCaptureValued, flags = kCaptureFlags;
    valued.insert({"output", "duration"});
    CliArgs a(args, flags, valued);
    if (a.positional().size() != 1) throw UsageError("attach takes exactly one PID: memlens-cli attach PID -o FILE");
    const std::string& pidText = a.positional()[0];
    capture::AttachOptions o;
    auto r = std::from_chars(pidText.data(), pidText.data() + pidText.size(), o.pid);
    if (pidText.empty() || r.ec != std::errc() || r.ptr != pidText.data() + pidText.size() || o.pid < 1)
        throw UsageError("attach needs a process id, got '" + pidText + "'");
    auto out = a.value("output");
    if (!out) throw UsageError("attach needs -o FILE (the session to write)");
    o.output = *out;
    parseCaptureOptions(a, o.capture, o.sampleIntervalMs);
    if (auto v = a.value("duration")) {
        try {
            size_t used = 0;
            o.durationSeconds = std::stod(*v, &used);
            if (used != v->size() || o.durationSeconds <= 0) throw std::invalid_argument("");
        } catch (const std::exception&) {
            throw UsageError("--duration needs seconds, more than 0, got '" + *v + "'");
        }
    }
    o.quiet = a.has("quiet");
    try {
        return capture::runAttach(o).exitStatus;
    } catch (const capture::RecorderError& e) {
        std::cerr << "memlens-cli: " << e.what() << "\n";
        return 1;
    }
}

int sessionCommand(const std::vector<std::string>& args) {
    CliArgs a(args, {"json", "check", "follow"}, {});
    if (a.positional().size() != 1) throw UsageError("session takes exactly one FILE");
    const std::string file = a.positional()[0];
    try {
        SessionFile f(file);
        if (a.has("check")) {
            std::string problem = f.check();
            if (!problem.empty()) {
                std::cerr << file << ": " << problem << "\n";
                return 1;
            }
        }
        if (a.has("follow")) {
            // Prints what the recorder adds until it stops writing.
            for (const auto& it : f.iterations()) printIteration(it);
            for (const auto& s : f.snapshots()) printSnapshot(s);
            std::cout.flush();
            for (;;) {
                bool live = f.live();
                auto u = f.poll();
                for (size_t k = f.iterations().size() - u.iterations; k < f.iterations().size(); ++k)
                    printIteration(f.iterations()[k]);
                for (size_t k = f.snapshots().size() - u.snapshots; k < f.snapshots().size(); ++k)
                    printSnapshot(f.snapshots()[k]);
                std::cout.flush();
                if (!live) break;
                std::this_thread::sleep_for(std::chrono::milliseconds(200));
            }
            if (!a.has("json")) return 0;
        }
        if (!a.has("json")) return printSummary(f, file);
        Json j;
        j["process"] = processJson(f.process());
        Json its = Json::array();
        for (const auto& it : f.iterations())
            its.push_back({{"index", it.index}, {"phase", it.phase}, {"start_us", it.startUs}, {"end_us", it.endUs}});
        j["iterations"] = std::move(its);
        Json snaps = Json::array();
        for (const auto& s : f.snapshots())
            snaps.push_back({{"id", s.id}, {"iteration", s.iteration}, {"trigger", s.trigger}, {"bytes", s.bytes},
                             {"info", parsedOr(s.infoJson, Json::object())}});
        j["snapshots"] = std::move(snaps);
        j["samples"] = f.samples().size();
        j["markers"] = f.markers().size();
        j["graph_scans"] = f.graphScans().size();
        j["finished"] = f.finished();
        j["live"] = f.live();
        std::cout << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
        return 0;
    } catch (const SessionError& e) {
        std::cout.flush();
        std::cerr << file << ": " << e.what() << "\n";
        return 1;
    }
}

int exportCommand(const std::vector<std::string>& args) {
    CliArgs a(args, {}, {"snapshot", "output"});
    if (a.positional().size() != 1) throw UsageError("export takes exactly one FILE");
    const std::string file = a.positional()[0];
    auto which = a.value("snapshot");
    if (!which) throw UsageError("export needs --snapshot ID (see memlens-cli session FILE)");
    try {
        SessionFile f(file);
        int64_t id = 0;
        if (*which == "last") {
            if (f.snapshots().empty()) throw SessionError("the session has no snapshot");
            id = f.snapshots().back().id;
        } else {
            id = a.integer("snapshot");
        }
        std::string out = a.value("output").value_or(std::filesystem::path(file).stem().string() + "-snapshot-" +
                                                     std::to_string(id) + ".pickle");
        f.writeSnapshotTo(id, out);
        return 0;
    } catch (const SessionError& e) {
        std::cerr << file << ": " << e.what() << "\n";
        return 1;
    }
}

} // namespace memlens::cli
