// The doctor's rules on a plain snapshot (SnapshotDoctor.h).
#include "memlens/model/SnapshotDoctor.h"

#include "memlens/model/AllocatorState.h"
#include "memlens/model/ByteFormat.h"
#include "memlens/model/IterationDiff.h"
#include "memlens/model/LiveBytes.h"
#include "memlens/model/MemoryBreakdown.h"
#include "memlens/model/MemoryCategory.h"
#include "memlens/model/OomVerdict.h"
#include "memlens/model/ParseError.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <sstream>

namespace memlens::model {

namespace {

constexpr size_t kMaxEvidenceEntries = 10000;

std::string bytesText(double b) { return formatBytes(static_cast<uint64_t>(std::llround(std::max(0.0, b)))); }

// Everything the rules share about one device.
struct Context {
    const Snapshot& snapshot;
    const DeviceData& device;
    const TraceColumns& trace;
    IterationSplit split;
    std::vector<StackRole> roles;
    std::vector<uint64_t> peaks;     // per iteration (all, complete or not)
    std::vector<uint64_t> baselines; // live right before each iteration's first entry
    std::vector<int64_t> ends;       // live right after each iteration's last entry
    uint64_t peak = 0;               // over the whole trace
    const std::atomic<bool>* cancel = nullptr;

    size_t complete() const { return split.complete(); }
    void checkCancel() const {
        if (cancel && cancel->load(std::memory_order_relaxed)) throw Cancelled();
    }
    StackRole role(StackId s) const { return s < roles.size() ? roles[s] : StackRole::Unknown; }
};

// Whether the allocator already runs with expandable segments: a segment says so, or the
// snapshot's allocator_settings (expandable_segments, or PYTORCH_CUDA_ALLOC_CONF naming it).
bool expandableSegmentsOn(const Context& c) {
    for (const Segment& seg : c.device.segments)
        if (seg.isExpandable) return true;
    for (const auto& [key, value] : c.snapshot.allocatorSettings) {
        std::string v = value;
        std::transform(v.begin(), v.end(), v.begin(), [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
        if (key == "expandable_segments" && (v == "true" || v == "1")) return true;
        if (key == "PYTORCH_CUDA_ALLOC_CONF" && (v.find("expandable_segments:true") != std::string::npos ||
                                                 v.find("expandable_segments: true") != std::string::npos))
            return true;
    }
    return false;
}

// Each iteration's peak, the live bytes before it and after it, and the peak of the trace.
void measureIterations(Context& c, uint64_t liveAtEnd) {
    const LiveBytes live(c.trace, liveAtEnd);
    const size_t n = c.trace.rows();
    if (n > 0) c.peak = static_cast<uint64_t>(std::max<int64_t>(live.max(), 0));
    for (const Iteration& it : c.split.iterations) {
        int64_t p = 0;
        if (it.lastEntry >= 0) {
            const size_t first = static_cast<size_t>(std::max<int64_t>(it.firstEntry, 0));
            const size_t last = std::min(static_cast<size_t>(it.lastEntry), n - 1);
            if (first <= last) p = std::max(p, live.maxIn(first, last));
        }
        c.peaks.push_back(static_cast<uint64_t>(std::max<int64_t>(p, 0)));
        // after the entry before the first; for an iteration from entry 0, before the trace's first
        const int64_t before = live.after(it.firstEntry - 1);
        c.baselines.push_back(static_cast<uint64_t>(std::max<int64_t>(before, 0)));
        c.ends.push_back(live.after(it.lastEntry));
    }
}

// The frame the stacks share that is nearest to the allocations (their common callers, outermost
// last), as frameText writes it; a single stack: its own innermost user frame.
std::string callSite(const Snapshot& s, const std::vector<const SurvivorGroup*>& gs) {
    if (gs.size() == 1) return whereOf(s, gs.front()->stack);
    const StackId first = gs.front()->stack;
    const size_t n = s.stackSize(first);
    size_t common = n;  // frames shared from the outermost end
    for (const SurvivorGroup* g : gs) {
        const size_t m = s.stackSize(g->stack);
        size_t k = 0;
        while (k < std::min(common, m) && s.stackBegin(first)[n - 1 - k] == s.stackBegin(g->stack)[m - 1 - k]) ++k;
        common = k;
    }
    if (common == 0) return whereOf(s, first);
    return frameText(s, s.stackBegin(first)[n - common]);
}

void addEvidence(const Survivors& s, const std::set<StackId>& stacks, Finding& f) {
    // the allocations themselves, for the window to highlight: the first of the survivors of
    // these stacks, in trace order
    std::vector<int64_t> entries;
    for (const SurvivorGroup& g : s.groups)
        if (stacks.count(g.stack)) entries.insert(entries.end(), g.allocs.begin(), g.allocs.end());
    std::sort(entries.begin(), entries.end());
    if (entries.size() > kMaxEvidenceEntries) entries.resize(kMaxEvidenceEntries);
    f.allocEntries.insert(f.allocEntries.end(), entries.begin(), entries.end());
}

// Survivors of every complete iteration at the end of the last complete one, by stack; the
// stacks that leave some in many iterations, up to the end, grow without bound.
void growthRules(Context& c, std::vector<Finding>& out) {
    const size_t complete = c.complete();
    if (complete < 3) return;
    const auto& its = c.split.iterations;
    const size_t last = complete - 1;
    const Survivors s = survivorsOf(c.trace, its, 0, last, its[last].lastEntry);
    auto indexOf = [&](int64_t number) {
        for (size_t k = 0; k < its.size(); ++k)
            if (its[k].number == number) return k;
        return size_t(0);
    };
    const size_t window = std::min<size_t>(last, std::max<size_t>(2, complete / 3));
    const size_t recent = last - window;
    std::vector<const SurvivorGroup*> growing;
    for (const SurvivorGroup& g : s.groups) {
        if (g.iterationsWith < 3) continue;
        const size_t first = indexOf(g.firstIteration), lastWith = indexOf(g.lastIteration);
        const size_t span = lastWith - first + 1;
        if (2 * g.iterationsWith < span) continue;  // now and then: not a steady leak
        if (lastWith < recent) continue;            // stopped growing
        // only the last few iterations' tensors: a bounded window (the last k kept, the current
        // step's still in scope), which slides instead of growing
        if (span <= window) continue;
        growing.push_back(&g);
    }
    if (growing.empty()) return;

    auto makeFinding = [&](const char* ruleId, const std::vector<const SurvivorGroup*>& gs) {
        Finding f;
        f.rule = ruleId;
        f.device = deviceName(c.device.device);
        f.deviceIndex = c.device.device;
        f.estimated = true;
        int64_t since = INT64_MAX;
        size_t firstIdx = SIZE_MAX;
        std::set<StackId> stacks;
        for (const SurvivorGroup* g : gs) {
            since = std::min(since, g->firstIteration);
            firstIdx = std::min(firstIdx, indexOf(g->firstIteration));
            f.bytes += g->bytes;
            f.count += g->count;
            stacks.insert(g->stack);
            f.stacks.push_back(g->stack);
        }
        // per iteration: over the iterations from the first that leaked to the last complete one
        f.perIterationBytes = static_cast<double>(f.bytes) / static_cast<double>(last - firstIdx + 1);
        f.sinceIteration = since;
        f.severity = severityFor(f.bytes, c.peak, true);
        f.frames = framesOf(c.snapshot, gs.front()->stack);
        for (size_t k = firstIdx; k < complete; ++k) f.iterations.push_back(its[k].number);
        addEvidence(s, stacks, f);
        return f;
    };

    // Stacks that leave survivors in exactly the same iterations are one leak: the tensors of one
    // computation kept together (a graph's saved activations), named by the call site their
    // stacks share.
    std::map<std::vector<bool>, std::vector<const SurvivorGroup*>> lockstep;
    std::vector<std::vector<const SurvivorGroup*>> clusters;
    for (const SurvivorGroup* g : growing) {
        if (g->stack == 0) {
            clusters.push_back({g});
            continue;
        }
        std::vector<bool> signature;
        for (uint64_t b : g->perIteration) signature.push_back(b != 0);
        lockstep[signature].push_back(g);
    }
    for (auto& [signature, gs] : lockstep) clusters.push_back(std::move(gs));
    std::sort(clusters.begin(), clusters.end(), [](const auto& a, const auto& b) {
        uint64_t x = 0, y = 0;
        for (auto* g : a) x += g->bytes;
        for (auto* g : b) y += g->bytes;
        return x > y;
    });

    const std::string lastName = std::to_string(its[last].number);
    size_t reported = 0;
    for (auto& gs : clusters) {
        if (reported++ >= 6) break;
        std::sort(gs.begin(), gs.end(), [](auto* a, auto* b) { return a->bytes > b->bytes; });
        const bool anyForward = std::any_of(gs.begin(), gs.end(), [&](auto* g) { return c.role(g->stack) == StackRole::Forward; });
        const char* ruleId = gs.size() >= 2 ? rule::kGraphKept : (anyForward ? rule::kKeptOnDevice : rule::kGrowth);
        Finding f = makeFinding(ruleId, gs);
        const std::string site = gs.front()->stack ? callSite(c.snapshot, gs) : std::string("allocations without a stack");
        const std::string per = bytesText(*f.perIterationBytes), since = std::to_string(*f.sinceIteration);
        if (f.rule == rule::kGraphKept) {
            f.title = "Tensors computed at " + site + " survive every iteration with what they were computed from: +" + per +
                      " per iteration since iteration " + since + " (a tensor kept with its autograd graph)";
            f.evidence = std::to_string(f.count) + " allocations from " + std::to_string(gs.size()) + " stacks under " + site + " (" +
                         formatBytes(f.bytes) + ") were still alive at the end of iteration " + lastName +
                         ", left together by every iteration since " + since +
                         ": a result kept with its graph keeps the activations saved for backward.";
            f.fix = "Keep a number, not the tensor: `losses.append(loss.item())` (or `loss.detach()`); evaluate under "
                    "`with torch.no_grad():`; call backward on every graph you build.";
        } else if (f.rule == rule::kKeptOnDevice) {
            f.title = "Tensors allocated at " + site + " are kept on the device: +" + per + " per iteration since iteration " + since;
            f.evidence = std::to_string(f.count) + " tensors allocated at " + site + " in the forward pass (" + formatBytes(f.bytes) +
                         ") were still alive at the end of iteration " + lastName +
                         ", from each iteration: outputs gathered on the device (or kept with their graph).";
            f.fix = "Move what you gather off the device and drop its graph: `preds.append(logits.detach().cpu())`, "
                    "or reduce it first (`correct += (logits.argmax(1) == y).sum().item()`).";
        } else {
            f.title = "Live memory grows at " + site + ": +" + per + " per iteration since iteration " + since;
            f.evidence = std::to_string(f.count) + " allocations at " + site + " (" + formatBytes(f.bytes) +
                         ") were still alive at the end of iteration " + lastName + ", left by " +
                         std::to_string(gs.front()->iterationsWith) + " iterations since " + since + ".";
            f.fix = "Find who keeps these tensors (the stack below) and let them go: `del` them, store `.cpu()` copies or numbers, "
                    "or bound the cache that holds them.";
        }
        out.push_back(std::move(f));
    }
}

// Gradients allocated by backward and still allocated through the whole next iteration (its
// forward included): zero_grad(set_to_none=False) or in-place zeroing.
void gradsKeptRule(Context& c, std::vector<Finding>& out, const std::set<StackId>& growingStacks) {
    const size_t complete = c.complete();
    if (complete < 2) return;
    const auto& its = c.split.iterations;
    uint64_t bytes = 0, count = 0;
    std::set<StackId> stacks;
    int64_t since = INT64_MAX;
    // backward's allocations never freed, for the evidence below (in settling order, sorted there)
    std::vector<int64_t> unfreed;
    forEachAllocationLife(c.trace, [&](const AllocationLife& l) {
        const StackId st = c.trace.stack[static_cast<size_t>(l.alloc)];
        if (c.role(st) != StackRole::Backward || growingStacks.count(st)) return;
        if (l.free < 0) unfreed.push_back(l.alloc);
        const int64_t k = iterationOf(its, l.alloc);
        if (k < 0 || static_cast<size_t>(k) + 1 >= complete) return;
        if (!l.aliveAfter(its[static_cast<size_t>(k) + 1].lastEntry)) return;
        bytes += c.trace.size[static_cast<size_t>(l.alloc)];
        count += 1;
        stacks.insert(st);
        since = std::min(since, its[static_cast<size_t>(k)].number);
    });
    if (!count) return;
    Finding f;
    f.rule = rule::kGradsKept;
    f.device = deviceName(c.device.device);
    f.deviceIndex = c.device.device;
    f.estimated = true;
    f.bytes = bytes;
    f.count = count;
    f.sinceIteration = since;
    f.severity = severityFor(bytes, c.peak, false);
    f.stacks.assign(stacks.begin(), stacks.end());
    f.frames = framesOf(c.snapshot, *stacks.begin());
    f.title = "Gradients stay allocated between steps: " + formatBytes(bytes) + " held through every forward pass";
    f.evidence = std::to_string(count) + " blocks allocated by backward in iteration " + std::to_string(since) +
                 " (" + formatBytes(bytes) + ") were still allocated at the end of the next iteration, through its forward pass: "
                 "gradients zeroed in place instead of set to None.";
    f.fix = "`optimizer.zero_grad(set_to_none=True)` (the default from torch 2.0) instead of `set_to_none=False` or "
            "`p.grad.zero_()`: gradients are then freed between steps.";
    std::sort(unfreed.begin(), unfreed.end());
    for (const int64_t e : unfreed)
        if (f.allocEntries.size() < kMaxEvidenceEntries && stacks.count(c.trace.stack[static_cast<size_t>(e)]))
            f.allocEntries.push_back(e);
    out.push_back(std::move(f));
}

// Peaks that go up and down with a steady baseline, and new segments at each new maximum: the
// longest batch sets the peak and reserved memory ratchets up.
void variableLengthRule(Context& c, std::vector<Finding>& out) {
    const size_t complete = c.complete();
    if (complete < 4) return;
    const auto& its = c.split.iterations;
    std::vector<uint64_t> peaks(c.peaks.begin(), c.peaks.begin() + static_cast<std::ptrdiff_t>(complete));
    std::vector<uint64_t> bases(c.baselines.begin(), c.baselines.begin() + static_cast<std::ptrdiff_t>(complete));
    const auto [pMin, pMax] = std::minmax_element(peaks.begin(), peaks.end());
    const auto [bMin, bMax] = std::minmax_element(bases.begin(), bases.end());
    const double peakSpread = static_cast<double>(*pMax - *pMin);
    if (peakSpread < 0.1 * static_cast<double>(*pMax)) return;
    if (static_cast<double>(*bMax - *bMin) > 0.5 * peakSpread) return;  // the baseline moves: growth, not shapes
    bool falls = false;
    for (size_t i = 1; i < complete && !falls; ++i)
        for (size_t j = 0; j < i; ++j)
            if (static_cast<double>(peaks[i]) < 0.9 * static_cast<double>(peaks[j])) {
                falls = true;
                break;
            }
    if (!falls) return;
    // iterations that set a new maximum and had to cudaMalloc for it
    int ratchets = 0;
    uint64_t maxSoFar = peaks[0];
    std::vector<int64_t> at;
    for (size_t k = 1; k < complete; ++k) {
        if (peaks[k] <= maxSoFar) continue;
        maxSoFar = peaks[k];
        bool grew = false;
        for (int64_t i = its[k].firstEntry; i <= its[k].lastEntry && !grew; ++i)
            grew = c.trace.action[i] == Action::SegmentAlloc || c.trace.action[i] == Action::SegmentMap;
        if (grew) ++ratchets, at.push_back(its[k].number);
    }
    std::vector<uint64_t> sorted = peaks;
    std::nth_element(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(sorted.size() / 2), sorted.end());
    const uint64_t median = sorted[sorted.size() / 2];
    Finding f;
    f.rule = rule::kVariableLength;
    f.device = deviceName(c.device.device);
    f.deviceIndex = c.device.device;
    f.estimated = true;
    f.bytes = *pMax - median;
    f.count = static_cast<uint64_t>(ratchets);
    // one new maximum can be one odd batch; the rule is about the cache ratcheting up
    f.severity = ratchets >= 2 ? severityFor(f.bytes, c.peak, false) : Severity::Info;
    f.iterations = at;
    f.title = "Per-iteration peaks vary from " + formatBytes(*pMin) + " to " + formatBytes(*pMax) +
              " with a steady baseline: the largest input sets the peak";
    f.evidence = "Live memory at the start of each iteration stays within " + formatBytes(*bMax - *bMin) +
                 ", but peaks range from " + formatBytes(*pMin) + " to " + formatBytes(*pMax) + " (median " + formatBytes(median) + ")" +
                 (ratchets ? "; " + std::to_string(ratchets) + " iterations reached a new maximum and reserved new segments for it" : std::string()) + ".";
    f.expandableAlready = expandableSegmentsOn(c);
    f.fix = f.expandableAlready
                ? "Bucket or pad inputs to a few fixed lengths (or cap the length); expandable segments are already on, "
                  "so the cache grows by pages, but the peak still follows the longest input."
                : "Bucket or pad inputs to a few fixed lengths (or cap the length); `PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True` "
                  "keeps the cache from ratcheting up.";
    out.push_back(std::move(f));
}

// verdicts: each oom entry's (oomVerdicts), in entry order
void fragmentationRule(Context& c, const std::vector<OomVerdict>& verdicts, std::vector<Finding>& out,
                       DoctorSummary& summary) {
    const TraceColumns& t = c.trace;
    for (const OomVerdict& v : verdicts) {
        const auto i = static_cast<size_t>(v.entry);
        summary.oom = true;
        c.checkCancel();
        summary.endPeak = v.liveBytes + v.asked;
        if (v.kind != OomKind::Fragmentation && v.kind != OomKind::OtherStream) continue;
        Finding f;
        f.rule = rule::kFragmentation;
        f.device = deviceName(c.device.device);
        f.deviceIndex = c.device.device;
        f.severity = Severity::Error;
        f.bytes = v.asked;
        f.count = 1;
        f.oomEntry = static_cast<int64_t>(i);
        f.stacks.push_back(t.stack[i]);
        f.frames = framesOf(c.snapshot, t.stack[i]);
        if (const int64_t k = iterationOf(c.split.iterations, static_cast<int64_t>(i)); k >= 0)
            f.iterations.push_back(c.split.iterations[static_cast<size_t>(k)].number);
        f.title = "Out of memory with " + formatBytes(v.cacheFree) + " free in the cache: no free block of " +
                  formatBytes(v.asked) + " (largest " + formatBytes(v.largestFree) + ")";
        f.evidence = v.sentence + ".";
        f.expandableAlready = v.expandable || expandableSegmentsOn(c);
        f.fix = f.expandableAlready
                    ? "Expandable segments are already on (" + std::string(v.expandable ? "the segments are expandable" : "allocator settings") +
                          "), so a setting will not cure it: " + v.advice
                    : "`PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True` (free pages are remapped instead of split); " + v.advice;
        out.push_back(std::move(f));
    }
}

// The verdict at each oom entry of the trace, in entry order: from the caller's history, or else
// from one rewind of the trace that stops right before each (no history: its checkpoints cost
// more than the rewind, and a trace without an oom needs no rewind at all)
std::vector<OomVerdict> oomVerdicts(const Snapshot& snapshot, const DeviceData& d, const StateHistory* history) {
    const TraceColumns& t = d.trace;
    std::vector<int64_t> before;  // the entry before each oom
    for (size_t i = 0; i < t.rows(); ++i)
        if (t.action[i] == Action::Oom) before.push_back(static_cast<int64_t>(i) - 1);
    std::vector<OomVerdict> out(before.size());
    if (history) {
        for (size_t k = 0; k < before.size(); ++k) out[k] = *oomVerdictAt(d, *history, before[k] + 1);
    } else if (!before.empty()) {
        // each state judged as it comes and dropped (a trace of many ooms keeps no state for each)
        takeDeviceStatesAfter(snapshot, d.device, before, BlockAllocs::Named,
                              [&](size_t k, DeviceState st) { out[k] = *oomVerdictAt(d, st, before[k] + 1); });
    }
    return out;
}

void summarise(Context& c, const DeviceState& final, double leakPerIteration, DoctorSummary& s) {
    const MemoryBreakdown b = computeBreakdown(final);
    s.reservedBytes = b.reservedBytes;
    s.liveBytes = b.bytes(BreakdownPart::LiveTensors);
    s.fragmentedBytes = b.bytes(BreakdownPart::FragmentedFree);
    s.cachedFreeBytes = s.fragmentedBytes + b.bytes(BreakdownPart::ReleasableFree) + b.bytes(BreakdownPart::Rounding) +
                        b.bytes(BreakdownPart::PendingFree);
    s.categories = categoriesAt(final, c.roles);
    s.hasCategories = true;
    std::ostringstream smi;
    smi << "nvidia-smi shows what the process holds, not live tensors: PyTorch has reserved " << formatBytes(s.reservedBytes)
        << " on " << deviceName(c.device.device) << " (plus the CUDA context and other libraries, not in a snapshot), of which live tensors take "
        << formatBytes(s.liveBytes) << "; " << formatBytes(s.cachedFreeBytes) << " is the allocator's cache";
    if (s.fragmentedBytes) smi << " (" << formatBytes(s.fragmentedBytes) << " of it free pieces inside segments still in use)";
    smi << ".";
    s.nvidiaSmi = smi.str();

    const size_t complete = c.complete();
    if (complete >= 1) {
        s.firstIterationPeak = c.peaks[0];
        if (!s.endPeak) s.endPeak = *std::max_element(c.peaks.begin(), c.peaks.end());
        // live bytes at the end of each complete iteration, from the first to the last
        if (complete >= 3)
            s.growthPerIteration = (static_cast<double>(c.ends[complete - 1]) - static_cast<double>(c.ends[0])) /
                                   static_cast<double>(complete - 1);
        std::ostringstream bs;
        const double growth = s.growthPerIteration.value_or(0.0);
        if (leakPerIteration > 0) {
            bs << "It is not the batch size: the first iteration peaked at " << formatBytes(*s.firstIterationPeak)
               << ", memory then grew by " << bytesText(leakPerIteration) << " per iteration";
            bs << (s.oom ? " until the allocation that failed needed " : " to a peak of ") << formatBytes(*s.endPeak) << ".";
        } else if (complete >= 3 && std::abs(growth) < 0.01 * static_cast<double>(*s.firstIterationPeak)) {
            bs << "Memory is steady across iterations: the first iteration peaked at " << formatBytes(*s.firstIterationPeak)
               << (s.oom ? " and the failed allocation needed " : ", the highest at ") << formatBytes(*s.endPeak)
               << "; the batch size, the inputs and the model set the peak.";
        } else {
            bs << "The first iteration peaked at " << formatBytes(*s.firstIterationPeak) << (s.oom ? ", the failed allocation needed " : ", the highest at ")
               << formatBytes(*s.endPeak);
            if (s.growthPerIteration) bs << "; live memory at iteration ends changed by " << formatSignedBytes(static_cast<int64_t>(std::llround(growth))) << " per iteration";
            bs << ", with no allocation stack that leaks steadily.";
        }
        s.batchSize = bs.str();
    } else {
        s.batchSize = "No complete iteration in the trace: the batch size cannot be told apart from growth.";
    }
}

} // namespace

int doctorDevice(const Snapshot& snapshot) {
    int best = -1;
    size_t bestRows = 0;
    uint64_t bestReserved = 0;
    for (const DeviceData& d : snapshot.devices) {
        if (d.isHost()) continue;  // the doctor reads GPU memory, not the pinned host memory
        uint64_t reserved = 0;
        for (const Segment& s : d.segments) reserved += s.totalSize;
        if (best < 0 || d.trace.rows() > bestRows || (d.trace.rows() == bestRows && reserved > bestReserved))
            best = d.device, bestRows = d.trace.rows(), bestReserved = reserved;
    }
    return best;
}

DoctorReport diagnoseSnapshot(const Snapshot& snapshot, const DoctorOptions& options) {
    DoctorReport report;
    report.kind = "snapshot";
    const int device = options.device >= 0 ? options.device : doctorDevice(snapshot);
    const DeviceData* dd = snapshot.device(device);
    if (!dd) {
        report.notes.push_back("the snapshot has no device to diagnose");
        return report;
    }
    report.device = device;
    Context c{snapshot, *dd, dd->trace, {}, {}, {}, {}, {}, 0, options.cancel};
    c.split = options.iterations ? iterationsFromTimes(snapshot, device, *options.iterations) : splitIterations(snapshot, device);
    c.checkCancel();
    c.roles = stackRoles(snapshot);
    // the caller's history and final state, else none built: the final state is the snapshot's
    // own (a pass over the trace names its blocks' allocs), the states before the ooms come from
    // one rewind (oomVerdicts)
    const StateHistory* history = options.history && options.history->device() == device ? options.history : nullptr;
    std::optional<DeviceState> ownFinal;
    const DeviceState& final = options.finalState && options.finalState->device == device
                                   ? *options.finalState
                                   : ownFinal.emplace(history ? history->stateAfter(history->entries() - 1)
                                                              : finalDeviceState(snapshot, device));
    measureIterations(c, final.requestedBytes);
    c.checkCancel();

    if (c.trace.rows() == 0) report.notes.push_back("the snapshot has no trace: only its final state can be judged");
    else if (c.split.iterations.empty()) report.notes.push_back("no iterations found in the trace (no annotations, no repeating pattern)");
    else if (c.complete() < 3)
        report.notes.push_back("only " + std::to_string(c.complete()) + " complete iterations in the trace: growth needs at least 3");
    if (c.split.lastIncomplete)
        report.notes.push_back("the trace ends inside iteration " + std::to_string(c.split.iterations.back().number) +
                               ": its unfreed memory is work in progress, not growth");

    std::vector<Finding> findings;
    growthRules(c, findings);
    c.checkCancel();
    std::set<StackId> growing;
    for (const Finding& f : findings) growing.insert(f.stacks.begin(), f.stacks.end());
    gradsKeptRule(c, findings, growing);
    variableLengthRule(c, findings);
    c.checkCancel();
    fragmentationRule(c, oomVerdicts(snapshot, *dd, history), findings, report.summary);
    double leakPerIteration = 0;
    for (const Finding& f : findings)
        if (f.perIterationBytes && (f.rule == rule::kGraphKept || f.rule == rule::kKeptOnDevice || f.rule == rule::kGrowth))
            leakPerIteration += *f.perIterationBytes;
    summarise(c, final, leakPerIteration, report.summary);
    sortFindings(findings);
    report.findings = std::move(findings);
    report.iterations = std::move(c.split);
    return report;
}

} // namespace memlens::model
