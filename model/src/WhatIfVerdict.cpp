#include "memlens/model/WhatIfVerdict.h"

#include "memlens/model/ByteFormat.h"

namespace memlens::model {

namespace {

std::string oomDetails(const OomOutcome& o) {
    return "asking " + formatBytes(o.sizeAsked) + " with " + formatBytes(o.totalFree) +
           " free in the cache, the largest free block " + formatBytes(o.largestFreeBlock);
}

} // namespace

std::string whatIfVerdict(const WhatIfResult& r, const std::string& asked) {
    const Outcome& rec = r.recording;
    const Outcome& sim = r.simulation;
    std::string s = asked.empty() ? "Replayed unchanged" : "With " + asked;
    if (sim.peakReserved == rec.peakReserved) {
        s += " the peak reserved stays at " + formatBytes(rec.peakReserved);
    } else if (formatBytes(sim.peakReserved) == formatBytes(rec.peakReserved)) {  // too close to tell apart
        const bool lower = sim.peakReserved < rec.peakReserved;
        s += " the peak reserved is " + formatBytes(lower ? rec.peakReserved - sim.peakReserved : sim.peakReserved - rec.peakReserved) +
             (lower ? " lower" : " higher") + " than the recording's " + formatBytes(rec.peakReserved);
    } else {
        s += " the peak reserved is " + formatBytes(sim.peakReserved) + " instead of " + formatBytes(rec.peakReserved);
    }

    if (rec.firstOom && !sim.firstOom) {
        s += " and the out-of-memory at entry #" + std::to_string(rec.firstOom->entry) + " does not happen";
    } else if (rec.firstOom && sim.firstOom) {
        s += sim.firstOom->entry == rec.firstOom->entry
                 ? " and the out-of-memory at entry #" + std::to_string(rec.firstOom->entry) + " still happens ("
                 : " and it still runs out of memory, at entry #" + std::to_string(sim.firstOom->entry) +
                       " instead of #" + std::to_string(rec.firstOom->entry) + " (";
        s += oomDetails(*sim.firstOom) + ")";
    } else if (!rec.firstOom && sim.firstOom) {
        s += " but it runs out of memory at entry #" + std::to_string(sim.firstOom->entry) + " (" +
             oomDetails(*sim.firstOom) + ")";
    } else {
        s += "; no out-of-memory error either way";
    }
    s += ".";
    if (r.edits.freedEarly)
        s += " " + std::to_string(r.edits.freedEarly) + " allocations (" + formatBytes(r.edits.bytesFreedEarly) +
             ") are freed at the end of their iteration instead of surviving it.";
    if (r.estimated || r.edits.estimated) s += " An estimate: scaled allocations need not scale with the batch.";
    return s;
}

} // namespace memlens::model
