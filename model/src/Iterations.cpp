#include "memlens/model/Iterations.h"

#include <algorithm>
#include <cctype>

namespace memlens::model {

std::optional<int64_t> iterationNumber(std::string_view name) {
    std::string s;
    s.reserve(name.size());
    for (char c : name) s += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    auto isSep = [](char c) { return c == ' ' || c == '#' || c == '_' || c == '-' || c == ':' || c == '=' || c == '.'; };
    size_t i = 0;
    while (i < s.size() && isSep(s[i])) ++i;
    static const char* const prefixes[] = {"profilerstep", "iteration", "iter", "train_step", "step"};
    size_t matched = 0;
    for (const char* p : prefixes) {
        std::string_view pv(p);
        if (s.compare(i, pv.size(), pv) == 0) {
            matched = pv.size();
            break;
        }
    }
    if (!matched) return std::nullopt;
    i += matched;
    size_t seps = 0;
    while (i < s.size() && isSep(s[i])) ++i, ++seps;
    if (i >= s.size() || !std::isdigit(static_cast<unsigned char>(s[i]))) return std::nullopt;
    int64_t n = 0;
    size_t digits = 0;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])) && digits < 18) n = n * 10 + (s[i++] - '0'), ++digits;
    while (i < s.size() && isSep(s[i])) ++i;
    if (i != s.size()) return std::nullopt;  // "step 3 of eval" is not an iteration marker
    (void)seps;
    return n;
}

std::vector<Iteration> detectIterations(const Snapshot& snapshot, int device) {
    std::vector<Iteration> out;
    const DeviceData* dd = snapshot.device(device);
    if (!dd || dd->trace.rows() == 0) return out;
    const TraceColumns& t = dd->trace;
    const auto n = static_cast<int64_t>(t.rows());
    bool timed = false;
    for (int64_t i = 0; i < n && !timed; ++i) timed = (t.flags[i] & TraceColumns::HasTime) != 0;
    if (!timed) return out;

    struct Range {
        int64_t number;
        std::string name;
        int64_t start, end;  // time_us; end -1: open
    };
    std::vector<Range> ranges;
    for (const Annotation& a : snapshot.annotations) {
        if (a.device != device && a.device >= 0 && snapshot.devices.size() > 1) continue;
        std::string_view name = snapshot.str(a.name);
        auto num = iterationNumber(name);
        if (!num) continue;
        if (a.start) {
            ranges.push_back({*num, std::string(name), a.timeUs, -1});
        } else {
            for (auto it = ranges.rbegin(); it != ranges.rend(); ++it)
                if (it->end < 0 && it->name == name) {
                    it->end = a.timeUs;
                    break;
                }
        }
    }
    std::sort(ranges.begin(), ranges.end(), [](const Range& a, const Range& b) { return a.start < b.start; });
    // an iteration without END runs to the next one's start
    for (size_t i = 0; i < ranges.size(); ++i)
        if (ranges[i].end < 0) ranges[i].end = i + 1 < ranges.size() ? ranges[i + 1].start : INT64_MAX;

    // entries' times are nondecreasing; the first entry at or after a time
    auto firstAtOrAfter = [&](int64_t time) {
        int64_t lo = 0, hi = n;
        while (lo < hi) {
            int64_t mid = (lo + hi) / 2;
            if (t.timeUs[mid] < time) lo = mid + 1; else hi = mid;
        }
        return lo;
    };
    for (const Range& r : ranges) {
        Iteration it;
        it.number = r.number;
        it.name = r.name;
        it.firstEntry = firstAtOrAfter(r.start);
        it.lastEntry = (r.end == INT64_MAX ? n : firstAtOrAfter(r.end + 1)) - 1;
        if (!out.empty() && it.firstEntry <= out.back().lastEntry) out.back().lastEntry = it.firstEntry - 1;
        out.push_back(std::move(it));
    }
    return out;
}

int64_t iterationOf(const std::vector<Iteration>& iterations, int64_t entry) {
    auto it = std::upper_bound(iterations.begin(), iterations.end(), entry,
                               [](int64_t e, const Iteration& x) { return e < x.firstEntry; });
    if (it == iterations.begin()) return -1;
    --it;
    if (entry > it->lastEntry) return -1;
    return it - iterations.begin();
}

} // namespace memlens::model
