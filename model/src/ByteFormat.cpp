#include "memlens/model/ByteFormat.h"

#include <cstdio>

namespace memlens::model {

std::string formatBytes(uint64_t bytes) {
    static const char* const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    if (bytes < 1024) return std::to_string(bytes) + " B";
    double v = static_cast<double>(bytes);
    int u = 0;
    while ((v >= 1024.0 || (v >= 1023.95 && u > 0)) && u < 6) {  // 1023.97 MiB reads "1 GiB"
        v /= 1024.0;
        ++u;
    }
    char buf[32];
    if (v >= 99.95) {
        std::snprintf(buf, sizeof buf, "%.0f", v);
    } else {
        std::snprintf(buf, sizeof buf, "%.1f", v);
        std::string s = buf;
        if (s.size() > 2 && s.compare(s.size() - 2, 2, ".0") == 0) s.resize(s.size() - 2);
        return s + " " + units[u];
    }
    return std::string(buf) + " " + units[u];
}

std::string formatSignedBytes(int64_t bytes) {
    if (bytes < 0) return "-" + formatBytes(static_cast<uint64_t>(-(bytes + 1)) + 1);
    return "+" + formatBytes(static_cast<uint64_t>(bytes));
}

} // namespace memlens::model
