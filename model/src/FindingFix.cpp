#include "memlens/model/FindingFix.h"

#include <algorithm>
#include <cstdlib>

namespace memlens::model {

FindingFix fixOf(const Finding& f) {
    FindingFix fix;
    const bool leak = f.rule == rule::kGraphKept || f.rule == rule::kKeptOnDevice || f.rule == rule::kGrowth ||
                      f.rule == rule::kGradsKept;
    if (leak && !f.stacks.empty()) {
        fix.possible = true;
        fix.edits.freeStackIds = f.stacks;
        std::sort(fix.edits.freeStackIds.begin(), fix.edits.freeStackIds.end());
        fix.edits.freeStackIds.erase(std::unique(fix.edits.freeStackIds.begin(), fix.edits.freeStackIds.end()), fix.edits.freeStackIds.end());
        fix.asked = "the " + f.rule + " finding fixed (its allocations freed at the end of their iteration)";
        return fix;
    }
    if (f.rule == rule::kFragmentation && f.expandableAlready) {
        fix.why = "expandable segments are already on: what is left to fix is the program (freeing long-lived "
                  "tensors sooner, allocating the big buffers first), which the trace cannot replay";
        return fix;
    }
    if (f.rule == rule::kFragmentation) {
        fix.possible = true;
        fix.settings = {{"expandable_segments", "True"}};
        fix.asked = "the fragmentation finding fixed (expandable_segments:True)";
        return fix;
    }
    if (leak) fix.why = "the " + f.rule + " finding comes from the agent's records, not from allocations of this trace";
    else fix.why = "the fix of a " + f.rule + " finding changes the program, not its allocations: the trace cannot replay it";
    return fix;
}

const Finding* findFinding(const DoctorReport& report, const std::string& name) {
    if (name.empty()) return nullptr;
    char* end = nullptr;
    const long n = std::strtol(name.c_str(), &end, 10);
    if (end && *end == '\0') {
        if (n >= 1 && static_cast<size_t>(n) <= report.findings.size()) return &report.findings[static_cast<size_t>(n - 1)];
        return nullptr;
    }
    for (const Finding& f : report.findings)
        if (f.rule == name) return &f;
    return nullptr;
}

} // namespace memlens::model
