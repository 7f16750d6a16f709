#include "core/EventFilter.h"

#include "core/StackFrames.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <unordered_map>

namespace memlens::views {

namespace {

std::string lower(std::string s) {
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return s;
}

// For each stack: does its top frame's label contain the text?
std::vector<uint8_t> stacksMatching(const model::Snapshot& snapshot, const std::string& needle) {
    std::vector<uint8_t> out(snapshot.stackCount(), 0);
    for (size_t s = 0; s < out.size(); ++s)
        out[s] = lower(frames::topFrameLabel(snapshot, static_cast<model::StackId>(s))).find(needle) != std::string::npos;
    return out;
}

} // namespace

bool EventFilter::onlyRange() const {
    return actions == kAllActions && minSize == 0 && maxSize == std::numeric_limits<uint64_t>::max() && text.empty();
}

std::vector<int64_t> EventFilter::apply(const model::Snapshot& snapshot, const model::TraceColumns& trace,
                                        const std::atomic<bool>* cancel) const {
    std::vector<int64_t> out;
    const int64_t n = static_cast<int64_t>(trace.rows());
    const int64_t lo = std::max<int64_t>(first, 0), hi = std::min<int64_t>(last, n - 1);
    if (lo > hi) return out;
    std::string needle = lower(text);
    std::string hexNeedle = needle.starts_with("0x") ? needle.substr(2) : needle;
    const bool hexOk = !hexNeedle.empty() && hexNeedle.find_first_not_of("0123456789abcdef") == std::string::npos;
    std::vector<uint8_t> stackMatch;
    if (!needle.empty()) stackMatch = stacksMatching(snapshot, needle);
    // user_metadata and compile_context strings: a few distinct ones, each tested once
    std::unordered_map<model::StringId, bool> labelMatch;
    auto labelMatches = [&](model::StringId id) {
        if (id == model::StringTable::kEmpty) return false;
        auto [it, inserted] = labelMatch.try_emplace(id, false);
        if (inserted) it->second = lower(std::string(snapshot.str(id))).find(needle) != std::string::npos;
        return it->second;
    };
    const bool hasLabels = trace.userMetadata.size() == trace.rows() && trace.compileContext.size() == trace.rows();
    char buf[24];
    for (int64_t i = lo; i <= hi; ++i) {
        if ((i & 0xFFFF) == 0 && cancel && cancel->load(std::memory_order_relaxed)) return {};
        const auto k = static_cast<size_t>(i);
        if (!(actions & bit(trace.action[k]))) continue;
        const uint64_t size = trace.size[k];
        if (size < minSize || size > maxSize) continue;
        if (!needle.empty()) {
            const model::StackId s = trace.stack[k];
            bool match = s < stackMatch.size() && stackMatch[s];
            if (!match && hasLabels) match = labelMatches(trace.userMetadata[k]) || labelMatches(trace.compileContext[k]);
            if (!match && hexOk && (trace.flags[k] & model::TraceColumns::HasAddr)) {
                std::snprintf(buf, sizeof buf, "%llx", static_cast<unsigned long long>(trace.addr[k]));
                match = std::string_view(buf).find(hexNeedle) != std::string_view::npos;
            }
            if (!match) continue;
        }
        out.push_back(i);
    }
    return out;
}

} // namespace memlens::views
