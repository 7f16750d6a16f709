#pragma once
// "What if this were fixed?": a doctor's finding as a change the allocator simulator can replay.
// Leaks (graph-kept, kept-on-device, growth) and kept gradients: the finding's allocations freed
// at the end of the iteration they were made in; fragmentation: expandable segments. Findings
// whose fix the trace cannot express (eval-with-grad, previous-batch, variable-length) say why.
#include "memlens/model/Finding.h"
#include "memlens/model/WorkloadEdits.h"

#include <string>
#include <utility>
#include <vector>

namespace memlens::model {

struct FindingFix {
    bool possible = false;
    std::string why;  // when not possible: one sentence
    WorkloadEdits edits;
    std::vector<std::pair<std::string, std::string>> settings;  // PYTORCH_CUDA_ALLOC_CONF keys to set
    std::string asked;  // the change in words, for the verdict
};

FindingFix fixOf(const Finding& finding);

// FINDING as the command line names it: a 1-based position in the report's order, or a rule id
// (its first finding). Null when none matches.
const Finding* findFinding(const DoctorReport& report, const std::string& name);

} // namespace memlens::model
