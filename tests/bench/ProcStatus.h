#pragma once
// The benchmarks' memory figures: a value in kB from /proc/self/status ("VmHWM", "VmRSS").
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

namespace bench {

// -1 when the line is absent.
inline long procStatusKb(const char* key) {
    std::ifstream in("/proc/self/status");
    std::string line;
    const size_t n = std::strlen(key);
    while (std::getline(in, line))
        if (line.compare(0, n, key) == 0 && line.size() > n && line[n] == ':') return std::atol(line.c_str() + n + 1);
    return -1;
}

} // namespace bench
