// The doctor's rules on a session (SessionDoctor.h).
#include "memlens/model/SessionDoctor.h"

#include "memlens/model/AllocatorState.h"
#include "memlens/model/ByteFormat.h"
#include "memlens/model/MemoryCategory.h"
#include "memlens/model/GraphScans.h"
#include "memlens/model/SnapshotReader.h"

#include "JsonField.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

namespace memlens::model {

namespace {

using Json = nlohmann::json;
using json_field::get;

Json parse(const std::string& text) {
    Json j = Json::parse(text, nullptr, false);
    return j.is_discarded() ? Json::object() : j;
}

std::string bytesText(double b) { return formatBytes(static_cast<uint64_t>(std::llround(std::max(0.0, b)))); }

uint64_t peakOfForward(const std::vector<ForwardRecord>& fs) {
    uint64_t p = 0;
    for (const ForwardRecord& f : fs) p = std::max(p, f.paramsBytes + f.outputBytes + f.inputBytes + f.savedBytes);
    return p;
}

// What the forward markers that show one mistake add up to.
struct Tally {
    uint64_t times = 0;   // markers that show it
    uint64_t bytes = 0;   // the most one of them showed
    uint64_t count = 0;   // the most tensors one of them showed
    int64_t since = 0;
    std::string device, module;
    std::vector<int64_t> iterations;
    std::set<std::string> references;

    void add(const ForwardRecord& f, uint64_t b, uint64_t c) {
        if (!times) since = f.iteration, device = f.device, module = f.module;
        ++times;
        bytes = std::max(bytes, b);
        count = std::max(count, c);
        iterations.push_back(f.iteration);
    }
    Finding finding(const char* ruleId, uint64_t peak) const {
        Finding x;
        x.rule = ruleId;
        x.device = device;
        x.bytes = bytes;
        x.count = count;
        x.sinceIteration = since;
        x.iterations = iterations;
        x.references.assign(references.begin(), references.end());
        x.severity = severityFor(bytes, peak, false);
        return x;
    }
};

void evalWithGrad(const std::vector<ForwardRecord>& fs, uint64_t peak, std::vector<Finding>& out) {
    Tally t;
    for (const ForwardRecord& f : fs)
        if (!f.training && f.gradEnabled && !f.inferenceMode && f.outputRequiresGrad) t.add(f, f.savedBytes, 0);
    if (!t.times) return;
    t.count = t.times;
    Finding x = t.finding(rule::kEvalWithGrad, peak);
    x.title = "Evaluation records autograd graphs: " + t.module + " ran in eval mode with gradients on, " + formatBytes(t.bytes) +
              " saved for a backward that never comes";
    x.evidence = std::to_string(t.times) + " calls of " + t.module + " with training == False while grad mode was on (from iteration " +
                 std::to_string(t.since) + "); each output required grad and its graph saved up to " + formatBytes(t.bytes) + " of activations.";
    x.fix = "Evaluate under `with torch.no_grad():` (or `with torch.inference_mode():`), after `model.eval()`.";
    out.push_back(std::move(x));
}

void gradsKept(const std::vector<ForwardRecord>& fs, uint64_t peak, std::vector<Finding>& out) {
    Tally t;
    for (const ForwardRecord& f : fs)
        if (f.training && f.gradsCount > 0) t.add(f, f.gradsBytes, f.gradsCount);
    if (!t.times) return;
    Finding x = t.finding(rule::kGradsKept, peak);
    x.title = "Gradients stay allocated between steps: " + std::to_string(t.count) + " parameters keep " + formatBytes(t.bytes) +
              " of .grad through every forward pass";
    x.evidence = "At the start of " + std::to_string(t.times) + " training forward passes (from iteration " + std::to_string(t.since) + "), " +
                 std::to_string(t.count) + " parameters still had a .grad (" + formatBytes(t.bytes) + "): gradients are zeroed in place, not freed.";
    x.fix = "`optimizer.zero_grad(set_to_none=True)` (the default from torch 2.0) instead of `set_to_none=False` or `p.grad.zero_()`.";
    out.push_back(std::move(x));
}

void previousBatch(const std::vector<ForwardRecord>& fs, uint64_t peak, std::vector<Finding>& out) {
    Tally t;
    for (const ForwardRecord& f : fs)
        if (f.previousCount > 0) {
            t.add(f, f.previousBytes, f.previousCount);
            t.references.insert(f.previousReferences.begin(), f.previousReferences.end());
        }
    if (!t.times) return;
    Finding x = t.finding(rule::kPreviousBatch, peak);
    const std::string who = t.references.empty() ? std::string("a reference") : "`" + *t.references.begin() + "`";
    x.title = who + " keeps the previous batch alive into the next iteration: the peak holds two (" + formatBytes(t.bytes) + " more)";
    x.evidence = "At " + std::to_string(t.times) + " forward passes (from iteration " + std::to_string(t.since) + "), " + std::to_string(t.count) +
                 " input tensors of the previous iteration (" + formatBytes(t.bytes) + ") were still alive" +
                 (t.references.empty() ? std::string(".") : ", held by " + *t.references.begin() + ".");
    x.fix = "Drop the reference before the next batch loads (`del batch, outputs` at the end of the step); do not keep `prev = x`.";
    out.push_back(std::move(x));
}

void variableLength(const std::vector<ForwardRecord>& fs, uint64_t peak, std::vector<Finding>& out) {
    std::vector<const ForwardRecord*> train;
    for (const ForwardRecord& f : fs)
        if (f.inputBytes) train.push_back(&f);
    if (train.size() < 4) return;
    uint64_t lo = UINT64_MAX, hi = 0;
    const ForwardRecord *small = nullptr, *large = nullptr;
    for (const ForwardRecord* f : train) {
        if (f->inputBytes < lo) lo = f->inputBytes, small = f;
        if (f->inputBytes > hi) hi = f->inputBytes, large = f;
    }
    if (static_cast<double>(hi - lo) < 0.1 * static_cast<double>(hi)) return;
    // shapes must differ, not just the number of inputs
    if (small->inputShapes.size() != large->inputShapes.size()) return;
    auto shapeText = [](const std::vector<int64_t>& s) {
        std::string t = "[";
        for (size_t i = 0; i < s.size(); ++i) t += (i ? ", " : "") + std::to_string(s[i]);
        return t + "]";
    };
    Finding x;
    x.rule = rule::kVariableLength;
    x.device = large->device;
    x.bytes = hi - lo;
    x.count = train.size();
    x.iterations = {small->iteration, large->iteration};
    x.severity = severityFor(hi - lo, peak, false);
    const std::string s0 = small->inputShapes.empty() ? "" : shapeText(small->inputShapes.front());
    const std::string s1 = large->inputShapes.empty() ? "" : shapeText(large->inputShapes.front());
    x.title = "Input shapes vary from " + s0 + " to " + s1 + ": the longest batch sets the peak";
    x.evidence = "Over " + std::to_string(train.size()) + " forward passes the inputs took " + formatBytes(lo) + " (iteration " +
                 std::to_string(small->iteration) + ") to " + formatBytes(hi) + " (iteration " + std::to_string(large->iteration) +
                 "); activations scale with them, and the cache keeps the largest.";
    x.fix = "Bucket or pad inputs to a few fixed lengths (or cap the length); `PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True` "
            "keeps the cache from ratcheting up.";
    out.push_back(std::move(x));
}

void keptOnDevice(const std::vector<KeptRecord>& ks, uint64_t peak, std::vector<Finding>& out) {
    // scans at iteration boundaries see every iteration at the same point of its step; the exit
    // scan (or one on request) sees another point: the growth is read from the boundaries alone
    // when there are two of them
    std::map<std::string, std::vector<const KeptRecord*>> byPattern, atBoundaries;
    std::map<std::string, const KeptRecord*> latest;  // what it holds now: the last scan of all
    for (const KeptRecord& k : ks) {
        byPattern[k.pattern].push_back(&k);
        latest[k.pattern] = &k;
        if (k.trigger == "iteration") atBoundaries[k.pattern].push_back(&k);
    }
    for (auto& [pattern, rs] : atBoundaries)
        if (rs.size() >= 2) byPattern[pattern] = rs;
    for (const auto& [pattern, rs] : byPattern) {
        if (rs.size() < 2) continue;
        const KeptRecord& first = *rs.front();
        const KeptRecord& last = *rs.back();
        if (last.count <= first.count || last.bytes <= first.bytes || last.iteration <= first.iteration) continue;
        // grows: at least half of the steps between scans went up
        size_t ups = 0;
        for (size_t i = 1; i < rs.size(); ++i) ups += rs[i]->bytes > rs[i - 1]->bytes;
        if (2 * ups < rs.size() - 1) continue;
        int64_t since = first.iteration;
        for (const KeptRecord* r : rs)
            if (r->count > 0) {
                since = r->iteration;
                break;
            }
        const double per = static_cast<double>(last.bytes - first.bytes) / static_cast<double>(last.iteration - first.iteration);
        // predictions gathered into a list (or deque) vs a dict that caches per step: growth
        const bool cache = last.container == "dict";
        const KeptRecord& now = *latest[pattern];
        Finding x;
        x.rule = cache ? rule::kGrowth : rule::kKeptOnDevice;
        x.device = last.device;
        x.bytes = now.bytes;
        x.count = now.count;
        x.perIterationBytes = per;
        x.sinceIteration = since;
        x.references = {pattern};
        x.severity = severityFor(last.bytes, peak, true);
        for (const KeptRecord* r : rs) x.iterations.push_back(r->iteration);
        const std::string from = "`" + pattern + "` held " + std::to_string(first.count) + " tensors (" + formatBytes(first.bytes) +
                                 ") at iteration " + std::to_string(first.iteration) + " and " + std::to_string(last.count) + " (" +
                                 formatBytes(last.bytes) + ") at iteration " + std::to_string(last.iteration) + ", on " + last.device +
                                 ", without graphs";
        if (cache) {
            x.title = "`" + pattern + "` caches a tensor on " + last.device + " every iteration and never lets go: +" + bytesText(per) +
                      " per iteration since iteration " + std::to_string(since) + ", " + formatBytes(now.bytes) + " now";
            x.evidence = from + ": a cache without a bound.";
            x.fix = "Bound the cache (drop old entries: `cache.pop(step - KEEP, None)`), or keep `.cpu()` copies or numbers in it.";
        } else {
            x.title = "`" + pattern + "` gathers tensors on " + last.device + ": +" + bytesText(per) + " per iteration since iteration " +
                      std::to_string(since) + ", " + formatBytes(now.bytes) + " now";
            x.evidence = from + ".";
            x.fix = "Move what you gather off the device: `preds.append(logits.detach().cpu())`, or reduce it first "
                    "(`correct += (logits.argmax(1) == y).sum().item()`).";
        }
        out.push_back(std::move(x));
    }
}

void graphsKept(const SessionFile& session, uint64_t peak, std::vector<Finding>& out) {
    if (session.graphScans().empty()) return;
    const GraphScans scans = GraphScans::fromStored(session.graphScans(), session.iterations());
    if (scans.empty()) return;
    const size_t last = scans.scans().size() - 1;
    for (size_t g = 0; g < scans.groups().size(); ++g) {
        const RootGroup& group = scans.groups()[g];
        const GroupGrowth growth = scans.growth(g, last);
        if (growth.kind != GroupGrowth::Kind::Growing) continue;
        const RootGroup::Point& now = group.points[last];
        Finding x;
        x.rule = rule::kGraphKept;
        x.bytes = now.bytes;
        x.count = static_cast<uint64_t>(now.graphs);
        x.perIterationBytes = growth.bytesPerStep;
        x.sinceIteration = growth.since;
        x.references = {group.pattern};
        x.graphPattern = group.pattern;
        x.severity = severityFor(now.bytes, peak, true);
        for (const auto& s : scans.scans()) x.iterations.push_back(s.iteration);
        const auto idx = scans.graphsOf(g, last);
        if (!idx.empty()) x.device = scans.scans()[last].graphs[idx.front()].device;
        const std::string phase = growth.phase.empty() ? "" : growth.phase + " ";
        x.title = "`" + group.pattern + "` keeps one autograd graph per " + phase + "iteration alive: +" + bytesText(growth.bytesPerStep) +
                  " per iteration since iteration " + std::to_string(growth.since) + ", " + formatBytes(now.bytes) + " now";
        x.evidence = "Graph scans found " + std::to_string(now.graphs) + " graphs held by `" + group.pattern + "` (" + formatBytes(now.bytes) +
                     " retained, " + std::to_string(now.savedAlive) + " saved tensors alive): " + growth.text + ".";
        x.fix = "Keep a number, not the tensor: `" + group.pattern.substr(0, group.pattern.find('[')) +
                ".append(loss.item())` (or `loss.detach()`); evaluate under `with torch.no_grad():`.";
        out.push_back(std::move(x));
    }
}


} // namespace

std::vector<ForwardRecord> forwardRecords(const std::vector<SessionMarker>& markers) {
    std::vector<ForwardRecord> out;
    for (const SessionMarker& m : markers) {
        if (m.name != "forward") continue;
        const Json d = parse(m.dataJson);
        ForwardRecord f;
        f.iteration = m.iteration;
        f.timeUs = m.timeUs;
        f.module = get<std::string>(d, "module", "the model");
        f.training = get<bool>(d, "training", true);
        f.gradEnabled = get<bool>(d, "grad_enabled", true);
        f.inferenceMode = get<bool>(d, "inference_mode", false);
        f.outputRequiresGrad = get<bool>(d, "output_requires_grad", false);
        f.outputBytes = get<uint64_t>(d, "output_bytes", 0);
        f.savedBytes = get<uint64_t>(d, "saved_bytes", 0);
        f.device = get<std::string>(d, "device", "");
        if (auto g = d.find("grads"); g != d.end()) f.gradsCount = get<uint64_t>(*g, "count", 0), f.gradsBytes = get<uint64_t>(*g, "bytes", 0);
        if (auto p = d.find("params"); p != d.end()) f.paramsCount = get<uint64_t>(*p, "count", 0), f.paramsBytes = get<uint64_t>(*p, "bytes", 0);
        if (auto in = d.find("inputs"); in != d.end() && in->is_array())
            for (const Json& t : *in) {
                f.inputBytes += get<uint64_t>(t, "bytes", 0);
                f.inputShapes.push_back(get<std::vector<int64_t>>(t, "shape", {}));
            }
        if (auto p = d.find("previous_inputs"); p != d.end() && p->is_object()) {
            f.previousCount = get<uint64_t>(*p, "count", 0);
            f.previousBytes = get<uint64_t>(*p, "bytes", 0);
            f.previousReferences = get<std::vector<std::string>>(*p, "references", {});
        }
        out.push_back(std::move(f));
    }
    return out;
}

std::vector<KeptRecord> keptRecords(const std::vector<SessionMarker>& markers) {
    std::vector<KeptRecord> out;
    for (const SessionMarker& m : markers) {
        if (m.name != "kept") continue;
        const Json d = parse(m.dataJson);
        auto groups = d.find("groups");
        if (groups == d.end() || !groups->is_array()) continue;
        const std::string trigger = get<std::string>(d, "trigger", "");
        for (const Json& g : *groups) {
            KeptRecord k;
            k.iteration = m.iteration;
            k.trigger = trigger;
            k.pattern = get<std::string>(g, "pattern", "");
            k.count = get<uint64_t>(g, "count", 0);
            k.bytes = get<uint64_t>(g, "bytes", 0);
            k.device = get<std::string>(g, "device", "");
            k.container = get<std::string>(g, "container", "");
            if (!k.pattern.empty()) out.push_back(std::move(k));
        }
    }
    return out;
}

const SessionSnapshot* snapshotToDiagnose(const SessionFile& session) {
    const SessionSnapshot* pick = nullptr;
    for (const SessionSnapshot& s : session.snapshots())
        if (s.trigger == trigger::kOutOfMemory) pick = &s;
    if (pick) return pick;
    return session.snapshots().empty() ? nullptr : &session.snapshots().back();
}

Snapshot readSessionSnapshot(const SessionFile& session, int64_t id) {
    const std::string bytes = session.readSnapshot(id);
    return readSnapshotMemory(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()));
}

std::vector<TimedIteration> timedIterations(const SessionFile& session) {
    std::vector<TimedIteration> out;
    for (const SessionIteration& it : session.iterations())
        out.push_back({it.index, it.phase + " iteration " + std::to_string(it.index), it.startUs, it.endUs});
    return out;
}

std::optional<std::pair<int64_t, int64_t>> snapshotsOfIterations(const SessionFile& session, int64_t from, int64_t to) {
    int64_t a = 0, b = 0;
    for (const SessionSnapshot& s : session.snapshots()) {
        if (s.iteration == from) a = s.id;
        if (s.iteration == to) b = s.id;
    }
    if (!a || !b) return std::nullopt;
    return std::make_pair(a, b);
}

std::vector<Finding> sessionFindings(const SessionFile& session) {
    std::vector<Finding> out;
    const auto forwards = forwardRecords(session.markers());
    const uint64_t peak = peakOfForward(forwards);
    graphsKept(session, peak, out);
    evalWithGrad(forwards, peak, out);
    gradsKept(forwards, peak, out);
    previousBatch(forwards, peak, out);
    variableLength(forwards, peak, out);
    keptOnDevice(keptRecords(session.markers()), peak, out);
    return out;
}

DoctorReport diagnoseSession(const SessionFile& session, const std::atomic<bool>* cancel) {
    DoctorOptions options;
    options.cancel = cancel;
    const SessionSnapshot* snap = snapshotToDiagnose(session);
    if (!snap) return diagnoseSession(session, nullptr, options);
    const Snapshot s = readSessionSnapshot(session, snap->id);
    DoctorReport report = diagnoseSession(session, &s, options);
    // the agent tagged the storages of this snapshot: exact categories where it did
    if (const CategoryTags tags = categoryTags(snap->infoJson); !tags.empty() && report.device >= 0) {
        const StateHistory history(s, report.device);
        report.summary.categories = categoriesAt(history.stateAfter(history.entries() - 1), stackRoles(s), tags);
    }
    report.notes.insert(report.notes.begin(), "snapshot " + std::to_string(snap->id) + " (" + snap->trigger + ", iteration " +
                                                  std::to_string(snap->iteration) + ") diagnosed");
    // process figures: the NVML reading closest before the snapshot
    for (const DeviceSample& d : session.samples())
        if (d.processUsed && d.device == report.device && d.timeUs <= snap->timeUs)
            report.summary.processBytes = static_cast<uint64_t>(*d.processUsed);
    if (report.summary.processBytes)
        report.summary.nvidiaSmi = "nvidia-smi showed " + formatBytes(*report.summary.processBytes) + " for the process; " +
                                   report.summary.nvidiaSmi;
    return report;
}

DoctorReport diagnoseSession(const SessionFile& session, const Snapshot* snapshot, DoctorOptions options) {
    DoctorReport report;
    std::vector<Finding> agent = sessionFindings(session);
    if (snapshot) {
        if (std::vector<TimedIteration> timed = timedIterations(session); !timed.empty()) options.iterations = std::move(timed);
        report = diagnoseSnapshot(*snapshot, options);
    } else {
        report.notes.push_back(session.process().snapshotsNote.empty() ? "no allocator snapshot in the session (a CPU job, or CUDA not used)"
                                                                        : "no allocator snapshot: " + session.process().snapshotsNote);
        report.summary.nvidiaSmi = "No GPU memory was recorded, so there is nothing for nvidia-smi to disagree with.";
        report.summary.batchSize = "No allocator snapshot: the per-iteration peaks are unknown.";
    }
    report.kind = "session";
    // the agent's evidence is exact: it replaces the estimate of the same rule
    std::set<std::string> exact;
    for (const Finding& f : agent) exact.insert(f.rule);
    if (exact.count(rule::kGraphKept) || exact.count(rule::kKeptOnDevice) || exact.count(rule::kGrowth)) {
        // the snapshot's survivors cannot tell these apart (a kept graph, gathered outputs, a
        // cache); the agent's referrers can: its leaks replace the estimated ones
        exact.insert(rule::kGraphKept);
        exact.insert(rule::kKeptOnDevice);
        exact.insert(rule::kGrowth);
    }
    std::vector<Finding> merged = std::move(agent);
    for (Finding& f : report.findings)
        if (!exact.count(f.rule)) merged.push_back(std::move(f));
    sortFindings(merged);
    report.findings = std::move(merged);
    // iterations: the session's own when the snapshot's trace did not cover them
    if (report.iterations.iterations.empty() && !session.iterations().empty()) {
        report.iterations.source = IterationSource::Session;
        for (const SessionIteration& it : session.iterations()) {
            Iteration x;
            x.number = it.index;
            x.name = it.phase;
            report.iterations.iterations.push_back(std::move(x));
        }
        report.iterations.lastIncomplete = session.iterations().back().endUs <= 0;
        report.iterations.note = "from the session's iterations";
    }
    return report;
}

} // namespace memlens::model
