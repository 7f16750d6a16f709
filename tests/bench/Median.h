#pragma once
// The benchmarks' median: of an even count, the mean of the two middle values.
#include <algorithm>
#include <vector>

namespace bench {

// 0 for no values.
inline double median(std::vector<double> values) {
    if (values.empty()) return 0;
    std::sort(values.begin(), values.end());
    const size_t n = values.size();
    return (values[(n - 1) / 2] + values[n / 2]) / 2;
}

} // namespace bench
