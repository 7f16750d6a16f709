#pragma once
// A what-if result in one sentence, for the window and the command line: "With
// expandable_segments:True the peak reserved is 1.31 GiB instead of 1.40 GiB and the
// out-of-memory at entry #5859 does not happen."
#include "memlens/model/WhatIf.h"

#include <string>

namespace memlens::model {

// asked: what the user changed, as they would say it ("expandable_segments:True",
// "capacity 2 GiB", "freeing what 'train.py' keeps at the end of its iteration"); empty: "unchanged".
std::string whatIfVerdict(const WhatIfResult& result, const std::string& asked);

} // namespace memlens::model
