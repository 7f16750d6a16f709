// Iterations of a trace that has no annotations (its repeating pattern) or that belongs to a
// session (the session's iteration times), and whether the trace ends inside the last one.
#include "memlens/model/Iterations.h"

#include <algorithm>
#include <map>
#include <unordered_map>

namespace memlens::model {

namespace {

bool isAlloc(Action a) { return a == Action::Alloc; }

std::vector<uint32_t> allocsPerIteration(const TraceColumns& t, const std::vector<Iteration>& its) {
    std::vector<uint32_t> out;
    out.reserve(its.size());
    for (const Iteration& it : its) {
        uint32_t c = 0;
        for (int64_t i = it.firstEntry; i <= it.lastEntry; ++i) c += isAlloc(t.action[i]);
        out.push_back(c);
    }
    return out;
}

bool hasOom(const TraceColumns& t, const Iteration& it) {
    for (int64_t i = it.firstEntry; i <= it.lastEntry; ++i)
        if (t.action[i] == Action::Oom) return true;
    return false;
}

// The last iteration is cut off when it holds the out-of-memory entry, or when it made clearly
// fewer allocations than the iterations before it did (the median of them).
bool lastLooksCut(const TraceColumns& t, const std::vector<Iteration>& its) {
    if (its.empty()) return false;
    if (hasOom(t, its.back())) return true;
    if (its.size() < 3) return false;
    std::vector<uint32_t> counts = allocsPerIteration(t, its);
    const uint32_t last = counts.back();
    counts.pop_back();
    std::nth_element(counts.begin(), counts.begin() + static_cast<std::ptrdiff_t>(counts.size() / 2), counts.end());
    const uint32_t median = counts[counts.size() / 2];
    return static_cast<double>(last) < 0.9 * static_cast<double>(median);
}

// Whether occurrences are spread about evenly: every gap within half to twice the median gap.
bool evenlySpaced(const std::vector<int64_t>& at) {
    if (at.size() < 2) return false;
    std::vector<int64_t> gaps;
    for (size_t i = 1; i < at.size(); ++i) gaps.push_back(at[i] - at[i - 1]);
    std::vector<int64_t> sorted = gaps;
    std::nth_element(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(sorted.size() / 2), sorted.end());
    const int64_t median = sorted[sorted.size() / 2];
    if (median <= 0) return false;
    return std::all_of(gaps.begin(), gaps.end(), [&](int64_t g) { return 2 * g >= median && g <= 2 * median; });
}

} // namespace

const char* iterationSourceName(IterationSource s) {
    switch (s) {
    case IterationSource::None: return "none";
    case IterationSource::Annotations: return "annotations";
    case IterationSource::Pattern: return "pattern";
    case IterationSource::Session: return "session";
    }
    return "none";
}

IterationSplit iterationsFromPattern(const Snapshot& snapshot, int device) {
    IterationSplit out;
    const DeviceData* dd = snapshot.device(device);
    if (!dd) return out;
    const TraceColumns& t = dd->trace;
    const auto n = static_cast<int64_t>(t.rows());

    // How often each stack allocates; the count most stacks share is the number of repeats.
    std::unordered_map<StackId, uint32_t> count;
    std::unordered_map<StackId, int64_t> first;
    for (int64_t i = 0; i < n; ++i) {
        if (!isAlloc(t.action[i]) || t.stack[i] == 0) continue;
        if (count[t.stack[i]]++ == 0) first[t.stack[i]] = i;
    }
    std::map<uint32_t, uint32_t> stacksWithCount;
    for (const auto& [stack, c] : count)
        if (c >= 2) ++stacksWithCount[c];
    if (stacksWithCount.empty()) return out;
    // Stacks inside a loop over layers recur a multiple of the iterations: try the smallest count
    // that many stacks share first (at least a quarter as many as the most shared count).
    uint32_t best = 0;
    for (const auto& [c, stacks] : stacksWithCount) best = std::max(best, stacks);
    if (best < 2) return out;
    std::vector<uint32_t> shared, tries;
    for (const auto& [c, stacks] : stacksWithCount)
        if (stacks >= 2 && 4 * stacks >= best) shared.push_back(c);
    // a trace cut inside an iteration: the stacks of its first part have one repeat more
    for (const uint32_t c : shared) {
        if (std::find(shared.begin(), shared.end(), c + 1) != shared.end() && std::find(tries.begin(), tries.end(), c + 1) == tries.end())
            tries.push_back(c + 1);
        if (std::find(tries.begin(), tries.end(), c) == tries.end()) tries.push_back(c);
    }

    std::unordered_map<StackId, std::vector<int64_t>> at;
    for (const uint32_t repeats : tries) {
        // The anchor: the earliest-starting stack with that count whose allocations are evenly spread.
        std::vector<std::pair<int64_t, StackId>> candidates;
        for (const auto& [stack, c] : count)
            if (c == repeats) candidates.emplace_back(first[stack], stack);
        std::sort(candidates.begin(), candidates.end());
        at.clear();
        for (const auto& [f, stack] : candidates) at[stack].reserve(repeats);
        for (int64_t i = 0; i < n; ++i)
            if (isAlloc(t.action[i]))
                if (auto it = at.find(t.stack[i]); it != at.end()) it->second.push_back(i);
        // an iteration is more than a tight loop of one allocation (parameters made one by one):
        // between two allocations of the anchor, another stack of the same count allocates
        std::vector<int64_t> all;
        for (const auto& [stack, positions] : at) all.insert(all.end(), positions.begin(), positions.end());
        std::sort(all.begin(), all.end());
        auto interleaved = [&](StackId anchor, const std::vector<int64_t>& positions) {
            for (size_t k = 0; k + 1 < positions.size(); ++k) {
                auto it = std::upper_bound(all.begin(), all.end(), positions[k]);
                bool other = false;
                for (; it != all.end() && *it < positions[k + 1]; ++it)
                    if (t.stack[static_cast<size_t>(*it)] != anchor) {
                        other = true;
                        break;
                    }
                if (!other) return false;
            }
            return true;
        };
        // Steps, not a loop inside one step: the other stacks of that count allocate about once
        // per period too. In a trace of one step of a many-layer model, the layers' forward
        // stacks recur as often as their backward ones, but each group sits in one part of the
        // trace: the backward's all after the last forward repeat, or the forward's all before
        // the first backward one.
        auto consistent = [&](StackId anchor, const std::vector<int64_t>& positions) {
            size_t others = 0, ok = 0;
            std::vector<uint32_t> bins(positions.size() + 1);
            for (const auto& [stack, where] : at) {
                if (stack == anchor) continue;
                ++others;
                std::fill(bins.begin(), bins.end(), 0);
                uint32_t most = 0;
                for (const int64_t i : where) {
                    const auto bin = std::upper_bound(positions.begin(), positions.end(), i) - positions.begin();
                    most = std::max(most, ++bins[static_cast<size_t>(bin)]);
                }
                ok += most <= 2;
            }
            return others == 0 || 5 * ok >= 4 * others;
        };
        for (const auto& [f, stack] : candidates) {
            const std::vector<int64_t>& positions = at[stack];
            if (!evenlySpaced(positions) || !interleaved(stack, positions) || !consistent(stack, positions)) continue;
            for (size_t k = 0; k < positions.size(); ++k) {
                Iteration it;
                it.number = static_cast<int64_t>(k) + 1;
                it.name = "iteration " + std::to_string(k + 1);
                it.firstEntry = positions[k];
                it.lastEntry = k + 1 < positions.size() ? positions[k + 1] - 1 : n - 1;
                out.iterations.push_back(std::move(it));
            }
            out.source = IterationSource::Pattern;
            out.anchor = stack;
            out.lastIncomplete = lastLooksCut(t, out.iterations);
            out.note = "from the trace's repeating pattern: one allocation stack recurs " + std::to_string(repeats) +
                       " times, evenly spaced (iterations counted from the first in the trace)";
            return out;
        }
    }
    return out;
}

// Iterations from annotations that mark a point of each step rather than number it: the ends of
// `Optimizer.step#…` ranges (an iteration ends with its step), else the starts of
// `enumerate(DataLoader)#…` ranges (one begins with its batch). What follows the last step is an
// unfinished iteration when it allocates.
IterationSplit iterationsFromStepMarkers(const Snapshot& snapshot, int device) {
    IterationSplit out;
    const DeviceData* dd = snapshot.device(device);
    if (!dd || dd->trace.rows() == 0) return out;
    const TraceColumns& t = dd->trace;
    const auto n = static_cast<int64_t>(t.rows());
    for (int64_t i = 0; i < n; ++i)
        if (!(t.flags[i] & TraceColumns::HasTime)) return out;
    auto times = [&](std::string_view prefix, bool start) {
        std::vector<int64_t> at;
        for (const Annotation& a : snapshot.annotations)
            if (a.start == start && a.timeUs >= 0 && (a.device == device || a.device < 0 || snapshot.devices.size() <= 1) &&
                snapshot.str(a.name).substr(0, prefix.size()) == prefix)
                at.push_back(a.timeUs);
        std::sort(at.begin(), at.end());
        return at;
    };
    auto firstAfter = [&](int64_t time) {  // the first entry later than time
        return static_cast<int64_t>(std::upper_bound(t.timeUs.begin(), t.timeUs.begin() + n, time) - t.timeUs.begin());
    };
    std::vector<int64_t> cuts;  // entries that begin an iteration (after the first)
    std::string what;
    if (std::vector<int64_t> ends = times("Optimizer.step#", false); !ends.empty()) {
        for (int64_t e : ends) cuts.push_back(firstAfter(e));
        what = "Optimizer.step";
    } else if (std::vector<int64_t> starts = times("enumerate(DataLoader)#", true); starts.size() >= 2) {
        for (size_t k = 1; k < starts.size(); ++k) cuts.push_back(firstAfter(starts[k] - 1));
        what = "enumerate(DataLoader)";
    } else {
        return out;
    }
    int64_t begin = what == "enumerate(DataLoader)" ? firstAfter(times("enumerate(DataLoader)#", true).front() - 1) : 0;
    auto add = [&](int64_t first, int64_t last) {
        Iteration it;
        it.number = static_cast<int64_t>(out.iterations.size()) + 1;
        it.name = "iteration " + std::to_string(it.number);
        it.firstEntry = first;
        it.lastEntry = last;
        out.iterations.push_back(std::move(it));
    };
    for (const int64_t cut : cuts) {
        if (cut <= begin) continue;
        add(begin, cut - 1);
        begin = cut;
    }
    bool tailAllocates = false;
    for (int64_t i = begin; i < n && !tailAllocates; ++i) tailAllocates = isAlloc(t.action[i]);
    if (tailAllocates) {
        add(begin, n - 1);
        out.lastIncomplete = what == "Optimizer.step" || hasOom(t, out.iterations.back());
    } else if (!out.iterations.empty()) {
        out.iterations.back().lastEntry = n - 1;
    }
    if (out.iterations.empty()) return out;
    out.source = IterationSource::Annotations;
    out.note = "from the snapshot's " + what + " annotations (one iteration per " +
               (what == "Optimizer.step" ? "optimizer step" : "DataLoader batch") + ")";
    return out;
}

IterationSplit splitIterations(const Snapshot& snapshot, int device) {
    IterationSplit out;
    out.iterations = detectIterations(snapshot, device);
    if (out.iterations.empty()) {
        if (IterationSplit marked = iterationsFromStepMarkers(snapshot, device); !marked.iterations.empty())
            return marked;
        return iterationsFromPattern(snapshot, device);
    }
    out.source = IterationSource::Annotations;
    const DeviceData* dd = snapshot.device(device);
    // open at the end: the last range never got its END annotation
    bool open = false;
    if (!out.iterations.empty()) {
        const std::string& last = out.iterations.back().name;
        int starts = 0, ends = 0;
        for (const Annotation& a : snapshot.annotations)
            if (snapshot.str(a.name) == last) (a.start ? starts : ends) += 1;
        open = starts > ends;
    }
    out.lastIncomplete = open || (dd && !out.iterations.empty() && hasOom(dd->trace, out.iterations.back()));
    out.note = "from the snapshot's annotations (" + out.iterations.front().name + " ...)";
    return out;
}

IterationSplit iterationsFromTimes(const Snapshot& snapshot, int device, const std::vector<TimedIteration>& timed) {
    IterationSplit out;
    const DeviceData* dd = snapshot.device(device);
    if (!dd || dd->trace.rows() == 0 || timed.empty()) return out;
    const TraceColumns& t = dd->trace;
    const auto n = static_cast<int64_t>(t.rows());
    auto firstAtOrAfter = [&](int64_t time) {
        return static_cast<int64_t>(std::lower_bound(t.timeUs.begin(), t.timeUs.end(), time) - t.timeUs.begin());
    };
    const int64_t traceEnd = t.timeUs.back();
    for (const TimedIteration& ti : timed) {
        const int64_t end = ti.endUs > 0 ? ti.endUs : INT64_MAX;
        Iteration it;
        it.number = ti.number;
        it.name = ti.name;
        it.firstEntry = firstAtOrAfter(ti.startUs);
        it.lastEntry = (end == INT64_MAX ? n : firstAtOrAfter(end + 1)) - 1;
        if (it.lastEntry < it.firstEntry) continue;  // outside the trace
        if (!out.iterations.empty() && it.firstEntry <= out.iterations.back().lastEntry)
            out.iterations.back().lastEntry = it.firstEntry - 1;
        out.iterations.push_back(std::move(it));
        out.lastIncomplete = ti.endUs <= 0 || ti.endUs > traceEnd;
    }
    if (out.iterations.empty()) return out;
    out.lastIncomplete = out.lastIncomplete || hasOom(t, out.iterations.back());
    out.source = IterationSource::Session;
    out.note = "from the session's iterations";
    return out;
}

} // namespace memlens::model
