#include "memlens/model/Finding.h"

#include "memlens/model/FrameClassification.h"

#include <algorithm>
#include <string>

namespace memlens::model {

const char* severityName(Severity s) {
    switch (s) {
    case Severity::Info: return "info";
    case Severity::Warning: return "warning";
    case Severity::Error: return "error";
    }
    return "info";
}

std::optional<Severity> severityFromName(std::string_view name) {
    if (name == "info") return Severity::Info;
    if (name == "warning") return Severity::Warning;
    if (name == "error") return Severity::Error;
    return std::nullopt;
}

Severity severityFor(uint64_t bytes, uint64_t peak, bool unbounded) {
    if (unbounded) return Severity::Error;
    constexpr uint64_t kMiB = 1024 * 1024;
    if (bytes >= kMiB || (peak > 0 && static_cast<double>(bytes) >= 0.01 * static_cast<double>(peak)))
        return Severity::Warning;
    return Severity::Info;
}

void sortFindings(std::vector<Finding>& findings) {
    std::stable_sort(findings.begin(), findings.end(), [](const Finding& a, const Finding& b) {
        if (a.severity != b.severity) return a.severity > b.severity;
        if (a.bytes != b.bytes) return a.bytes > b.bytes;
        return a.rule < b.rule;
    });
}

std::string frameText(const Snapshot& s, FrameId frame) {
    const Frame& f = s.frames[frame];
    std::string file(s.str(f.filename));
    if (auto slash = file.rfind('/'); slash != std::string::npos) file = file.substr(slash + 1);
    std::string out = file;
    if (f.lineKnown) out += ":" + std::to_string(f.line);
    const std::string_view name = s.str(f.name);
    if (!name.empty()) out += " (" + std::string(name) + ")";
    return out;
}

std::string whereOf(const Snapshot& s, StackId stack) {
    if (stack == 0 || stack >= s.stackCount() || s.stackSize(stack) == 0) return {};
    for (const FrameId* f = s.stackBegin(stack); f != s.stackBegin(stack) + s.stackSize(stack); ++f)
        if (classifyFrame(s, *f).kind == FrameKind::User) return frameText(s, *f);
    for (const FrameId* f = s.stackBegin(stack); f != s.stackBegin(stack) + s.stackSize(stack); ++f)
        if (!isRecordingMachinery(s.str(s.frames[*f].name))) return frameText(s, *f);
    return frameText(s, *s.stackBegin(stack));
}

std::vector<FindingFrame> framesOf(const Snapshot& s, StackId stack, size_t limit) {
    std::vector<FindingFrame> out;
    if (stack == 0 || stack >= s.stackCount()) return out;
    for (const FrameId* f = s.stackBegin(stack); f != s.stackBegin(stack) + s.stackSize(stack) && out.size() < limit; ++f) {
        const Frame& fr = s.frames[*f];
        if (out.empty() && isRecordingMachinery(s.str(fr.name))) continue;
        out.push_back({std::string(s.str(fr.name)), std::string(s.str(fr.filename)), fr.line});
    }
    return out;
}

} // namespace memlens::model
