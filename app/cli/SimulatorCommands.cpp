// memlens-cli replay / whatif: the recorded trace replayed through the allocator simulator.
#include "CliArgs.h"
#include "CsvEventWriter.h"
#include "CommandHelpers.h"
#include "Commands.h"

#include "memlens/model/Iterations.h"
#include "memlens/model/ParseError.h"
#include "memlens/model/RecordingComparison.h"
#include "memlens/model/Replay.h"
#include "memlens/model/SimulatorSettings.h"
#include "memlens/model/SnapshotReader.h"
#include "memlens/model/WhatIf.h"
#include "memlens/model/WhatIfVerdict.h"
#include "memlens/model/ByteFormat.h"
#include "memlens/model/FindingFix.h"
#include "memlens/model/SnapshotDoctor.h"
#include "memlens/model/Workload.h"
#include "memlens/model/WorkloadEdits.h"

#include <nlohmann/json.hpp>

#include <charconv>
#include <cstdio>
#include <iostream>
#include <stdexcept>

namespace memlens::cli {

using model::Snapshot;

namespace {

int deviceOf(const Snapshot& s, const CliArgs& a) {
    if (deviceArgument(a) == model::kHostDevice)
        throw UsageError("--device host: the simulator models the CUDA caching allocator, not the pinned host allocator");
    return checkDevice(s, a);
}

// Takes every "--NAME VALUE" / "--NAME=VALUE" of a repeatable option out of args.
std::vector<std::string> takeRepeated(std::vector<std::string>& args, const std::string& name) {
    std::vector<std::string> out, rest;
    const std::string flag = "--" + name;
    for (size_t i = 0; i < args.size(); ++i) {
        if (args[i] == flag) {
            if (i + 1 >= args.size()) throw UsageError("option " + flag + " needs a value");
            out.push_back(args[++i]);
        } else if (args[i].rfind(flag + "=", 0) == 0) {
            out.push_back(args[i].substr(flag.size() + 1));
        } else {
            rest.push_back(args[i]);
        }
    }
    args = rest;
    return out;
}

Json actionJson(model::Action a, uint64_t addr, uint64_t size) {
    Json j{{"action", model::actionName(a)}};
    if (a == model::Action::Oom)
        j["device_free"] = addr;
    else
        j["addr"] = addr;
    j["size"] = size;
    return j;
}

Json oomJson(const std::optional<model::OomOutcome>& o) {
    if (!o) return nullptr;
    return Json{{"entry", o->entry},
                {"size", o->sizeAsked},
                {"largest_free_block", o->largestFreeBlock},
                {"total_free", o->totalFree},
                {"device_free", o->deviceFree}};
}

Json outcomeJson(const model::Outcome& o) {
    Json entries = Json::array(), reserved = Json::array(), live = Json::array();
    for (const auto& p : o.series) {
        entries.push_back(p.entry);
        reserved.push_back(p.reserved);
        live.push_back(p.live);
    }
    return Json{{"peak_reserved", o.peakReserved},
                {"peak_reserved_entry", o.peakReservedEntry},
                {"peak_allocated", o.peakAllocated},
                {"peak_live", o.peakLive},
                {"fragmentation_at_peak",
                 Json{{"free_bytes", o.freeAtPeak},
                      {"largest_free_block", o.largestFreeAtPeak},
                      {"fragmentation", o.fragmentationAtPeak}}},
                {"first_oom", oomJson(o.firstOom)},
                {"ooms", o.ooms},
                {"series", Json{{"entry", entries}, {"reserved", reserved}, {"live", live}}}};
}

std::string mib(uint64_t b) {
    char buf[48];
    std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(b) / 1048576.0);
    return buf;
}

} // namespace

int replayCommand(const std::vector<std::string>& args) {
    CliArgs a(args, {"csv", "json"}, {"device"});
    std::string file = oneFile(a, "replay");
    Snapshot snap = model::readSnapshotFile(file);
    int dev = deviceOf(snap, a);
    model::SimulatorSettings settings = model::SimulatorSettings::fromSnapshot(snap);
    model::Workload w = model::buildWorkload(snap, dev, settings);
    model::ReplayOptions opt;
    opt.series = false;
    if (a.has("csv")) {  // each event written as the simulator makes it: none kept
        CsvEventWriter writer;
        opt.sink = &writer;
        model::replay(w, settings, opt);
        writer.flush();
        return 0;
    }
    model::RecordingComparison comparison(*snap.device(dev));  // as the events come: none kept
    opt.sink = &comparison;
    model::ReplayResult r = model::replay(w, settings, opt);
    model::Fidelity f = comparison.finish(r.atRecordedAddress);
    if (a.has("json")) {
        Json first = nullptr;
        if (!f.exact()) {
            first = Json{{"entry", f.first.entry >= 0 ? Json(f.first.entry) : Json(nullptr)},
                         {"recorded", f.first.entry >= 0 ? actionJson(f.first.recordedAction, f.first.recordedAddr,
                                                                      f.first.recordedSize)
                                                         : Json(nullptr)},
                         {"simulated", f.first.simulated ? actionJson(f.first.simulatedAction, f.first.simulatedAddr,
                                                                      f.first.simulatedSize)
                                                         : Json(nullptr)},
                         {"simulated_index", f.first.simulatedIndex}};
        }
        printJson(Json{{"device", dev},
                       {"entries", w.traceEntries},
                       {"settings", settings.describe()},
                       {"allocations", f.allocations},
                       {"at_recorded_address", f.atRecordedAddress},
                       {"simulated_events", r.eventCount},
                       {"compared_entries", f.comparedEntries},
                       {"matching_entries", f.matchingEntries},
                       {"exact", f.exact()},
                       {"first_difference", first},
                       {"initial_segments", w.initial.size()},
                       {"initial_blocks_estimated", w.estimatedInitialBlocks},
                       {"empty_cache_calls", w.emptyCacheCalls},
                       {"oom_retries", w.oomRetries},
                       {"recorded_ooms", w.recordedOoms},
                       {"unmatched_frees", w.unmatchedFrees},
                       {"streams", w.streams},
                       {"caveats", w.caveats},
                       {"segment_addresses",
                        Json{{"recorded", r.segmentAddressesRecorded}, {"invented", r.segmentAddressesInvented}}}});
        return 0;
    }
    std::cout << "device " << dev << ": " << w.traceEntries << " trace entries, " << r.eventCount
              << " simulated events\n"
              << "  allocations at the recorded address: " << f.atRecordedAddress << " of " << f.allocations << "\n";
    if (f.exact()) {
        std::cout << "  the simulation reproduces the recording\n";
    } else if (f.first.entry >= 0) {
        char buf[256];
        std::snprintf(buf, sizeof buf, "  first difference at entry %lld: recorded %s 0x%llx %llu, simulated ",
                      static_cast<long long>(f.first.entry), model::actionName(f.first.recordedAction),
                      static_cast<unsigned long long>(f.first.recordedAddr),
                      static_cast<unsigned long long>(f.first.recordedSize));
        std::cout << buf;
        if (f.first.simulated) {
            std::snprintf(buf, sizeof buf, "%s 0x%llx %llu\n", model::actionName(f.first.simulatedAction),
                          static_cast<unsigned long long>(f.first.simulatedAddr),
                          static_cast<unsigned long long>(f.first.simulatedSize));
            std::cout << buf;
        } else {
            std::cout << "nothing\n";
        }
    } else {
        std::cout << "  the simulation has " << f.extraSimulatedEvents << " events after the recording's last\n";
    }
    return 0;
}

int whatifCommand(const std::vector<std::string>& argsIn) {
    std::vector<std::string> args = argsIn;
    std::vector<std::string> sets = takeRepeated(args, "set");
    std::vector<std::string> stacks = takeRepeated(args, "free-stack");
    CliArgs a(args, {"json"}, {"device", "capacity", "fraction", "drop-above", "scale", "iteration", "fix"});
    std::string file = oneFile(a, "whatif");
    if (a.has("fix") && !stacks.empty()) throw UsageError("--fix and --free-stack do not go together");
    Snapshot snap = model::readSnapshotFile(file);
    int dev = deviceOf(snap, a);
    model::SimulatorSettings recorded = model::SimulatorSettings::fromSnapshot(snap);
    model::SimulatorSettings settings = recorded;
    // --fix FINDING: the doctor's finding (memlens-cli check's number or rule) as an edit
    std::optional<model::FindingFix> fix;
    if (auto name = a.value("fix")) {
        model::DoctorOptions options;
        options.device = dev;
        const model::DoctorReport report = model::diagnoseSnapshot(snap, options);
        const model::Finding* finding = model::findFinding(report, *name);
        if (!finding)
            throw std::invalid_argument("--fix " + *name + ": no such finding on device " + std::to_string(dev) + " (memlens-cli check lists " +
                                        std::to_string(report.findings.size()) + ")");
        fix = model::fixOf(*finding);
        if (!fix->possible) throw std::invalid_argument("--fix " + *name + ": " + fix->why);
        for (const auto& [key, value] : fix->settings) settings.set(key, value);
    }
    for (const std::string& kv : sets) {
        size_t eq = kv.find('=');
        if (eq == std::string::npos) throw std::invalid_argument("--set " + kv + ": expected KEY=VALUE");
        std::string key = kv.substr(0, eq);
        if (key == "capacity" || key == "fraction")
            throw std::invalid_argument("--set " + kv + ": use --" + key + " for the device");
        settings.set(key, kv.substr(eq + 1));
    }
    if (auto c = a.value("capacity")) settings.set("capacity", *c);
    if (auto f = a.value("fraction")) settings.set("fraction", *f);
    model::WorkloadEdits edits;
    edits.freeStacks = stacks;
    if (fix) edits.freeStackIds = fix->edits.freeStackIds;
    for (const auto& s : stacks)
        if (s.empty()) throw std::invalid_argument("--free-stack: the frame substring is empty");
    if (auto d = a.value("drop-above")) {
        uint64_t v = 0;
        auto r = std::from_chars(d->data(), d->data() + d->size(), v);
        if (d->empty() || r.ec != std::errc() || r.ptr != d->data() + d->size() || v == 0)
            throw std::invalid_argument("--drop-above " + *d + ": expected a positive number of bytes");
        edits.dropAbove = v;
    }
    if (auto s = a.value("scale")) {
        char* end = nullptr;
        double v = std::strtod(s->c_str(), &end);
        if (s->empty() || end != s->c_str() + s->size() || !(v > 0.0) || v > 1e6)
            throw std::invalid_argument("--scale " + *s + ": expected a positive factor");
        edits.scale = v;
    }
    if (auto it = a.value("iteration")) {
        int64_t v = 0;
        auto r = std::from_chars(it->data(), it->data() + it->size(), v);
        if (it->empty() || r.ec != std::errc() || r.ptr != it->data() + it->size())
            throw std::invalid_argument("--iteration " + *it + ": expected an iteration number");
        if (!edits.dropAbove && edits.scale == 1.0)
            throw std::invalid_argument("--iteration " + *it + ": goes with --drop-above or --scale");
        if (model::detectIterations(snap, dev).empty())
            throw std::invalid_argument("--iteration " + *it + ": the snapshot has no iteration annotations");
        edits.iteration = v;
    }
    model::WhatIfResult res = model::whatIf(snap, dev, settings, edits);
    // what was asked, in words, for the verdict
    std::string asked;
    auto ask = [&](const std::string& what) { asked += (asked.empty() ? "" : ", ") + what; };
    if (fix) ask(fix->asked);
    for (const std::string& kv : sets) ask(kv.substr(0, kv.find('=')) + ":" + kv.substr(kv.find('=') + 1));
    if (auto c = a.value("capacity")) ask("capacity " + model::formatBytes(settings.capacity));
    if (auto f = a.value("fraction")) ask("memory fraction " + *f);
    for (const auto& st : stacks) ask("the survivors of '" + st + "' freed at the end of their iteration");
    if (edits.dropAbove) ask("allocations above " + model::formatBytes(edits.dropAbove) + " dropped");
    if (edits.scale != 1.0) ask("forward/backward allocations scaled by " + *a.value("scale"));
    const std::string verdict = model::whatIfVerdict(res, asked);
    if (a.has("json")) {
        Json e{{"iterations", res.edits.iterations},
               {"free_stacks", stacks},
               {"fix", fix ? Json(*a.value("fix")) : Json(nullptr)},
               {"fix_stacks", edits.freeStackIds.size()},
               {"matched", res.edits.matched},
               {"freed_early", res.edits.freedEarly},
               {"bytes_freed_early", res.edits.bytesFreedEarly},
               {"drop_above", edits.dropAbove},
               {"dropped", res.edits.dropped},
               {"bytes_dropped", res.edits.bytesDropped},
               {"scale", edits.scale},
               {"iteration", edits.iteration ? Json(*edits.iteration) : Json(nullptr)},
               {"scaled", res.edits.scaled}};
        printJson(Json{{"device", dev},
                       {"settings", Json{{"recording", recorded.describe()}, {"simulation", settings.describe()}}},
                       {"capacity", res.settings.capacity ? Json(res.settings.capacity) : Json(nullptr)},
                       {"capacity_source", res.capacitySource},
                       {"fraction", res.settings.fractionSet() ? Json(res.settings.fraction) : Json(nullptr)},
                       {"edits", e},
                       {"estimated", res.estimated},
                       {"recording", outcomeJson(res.recording)},
                       {"simulation", outcomeJson(res.simulation)},
                       {"verdict", verdict}});
        return 0;
    }
    auto row = [](const char* name, const std::string& r, const std::string& s) {
        char buf[160];
        std::snprintf(buf, sizeof buf, "  %-24s %18s %18s\n", name, r.c_str(), s.c_str());
        std::cout << buf;
    };
    auto oomText = [](const std::optional<model::OomOutcome>& o) {
        return o ? "entry " + std::to_string(o->entry) + ", " + mib(o->sizeAsked) : std::string("none");
    };
    std::cout << "device " << dev << ": simulation with " << (settings.describe().empty() ? "the default settings" : settings.describe())
              << "; capacity " << (res.settings.capacity ? mib(res.settings.capacity) : "unlimited") << " ("
              << res.capacitySource << ")" << (res.estimated ? "; estimated" : "") << "\n";
    row("", "recording", "simulation");
    row("peak reserved", mib(res.recording.peakReserved), mib(res.simulation.peakReserved));
    row("peak allocated", mib(res.recording.peakAllocated), mib(res.simulation.peakAllocated));
    row("peak live", mib(res.recording.peakLive), mib(res.simulation.peakLive));
    row("free at peak", mib(res.recording.freeAtPeak), mib(res.simulation.freeAtPeak));
    row("first oom", oomText(res.recording.firstOom), oomText(res.simulation.firstOom));
    std::cout << verdict << "\n";
    return 0;
}

} // namespace memlens::cli
