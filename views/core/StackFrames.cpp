#include "core/StackFrames.h"

#include "memlens/model/FrameClassification.h"

#include <array>
#include <string_view>

namespace memlens::views::frames {

namespace {

bool contains(std::string_view s, std::string_view part) { return s.find(part) != std::string_view::npos; }

std::string_view baseName(std::string_view path) {
    const auto slash = path.find_last_of('/');
    return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

} // namespace

bool isNoise(const model::Snapshot& snapshot, model::FrameId frame) {
    const model::Frame& f = snapshot.frames[frame];
    const std::string_view name = snapshot.str(f.name), file = snapshot.str(f.filename);
    static constexpr std::array<std::string_view, 6> kNames = {
        "unwind::unwind", "CapturedTraceback", "PyEval_", "torch::unwind::", "CUDACachingAllocator", "_PyObject_",
    };
    for (auto k : kNames)
        if (contains(name, k)) return true;
    return file.ends_with("ceval.c") || file.ends_with("CUDACachingAllocator.cpp") || (name.empty() && file.empty());
}

bool isPython(const model::Snapshot& snapshot, model::FrameId frame) {
    return model::classifyFrame(snapshot, frame).kind != model::FrameKind::Native;
}

bool isLibrary(const model::Snapshot& snapshot, model::FrameId frame) {
    return model::classifyFrame(snapshot, frame).kind == model::FrameKind::Library;
}

std::optional<model::FrameId> topFrame(const model::Snapshot& snapshot, model::StackId stack) {
    if (stack >= snapshot.stackCount()) return std::nullopt;
    const model::FrameId* b = snapshot.stackBegin(stack);
    const model::FrameId* e = b + snapshot.stackSize(stack);
    std::optional<model::FrameId> library, native;
    for (const model::FrameId* p = b; p != e; ++p) {
        switch (model::classifyFrame(snapshot, *p).kind) {
        case model::FrameKind::User: return *p;
        case model::FrameKind::Library:
            if (!library) library = *p;
            break;
        case model::FrameKind::Native:
            if (!native && !isNoise(snapshot, *p)) native = *p;
            break;
        }
    }
    return library ? library : native;
}

std::vector<model::FrameId> usefulFrames(const model::Snapshot& snapshot, model::StackId stack, size_t n) {
    std::vector<model::FrameId> out;
    if (stack >= snapshot.stackCount()) return out;
    const model::FrameId* b = snapshot.stackBegin(stack);
    const model::FrameId* e = b + snapshot.stackSize(stack);
    for (const model::FrameId* p = b; p != e && out.size() < n; ++p)
        if (!isNoise(snapshot, *p)) out.push_back(*p);
    return out;
}

std::string label(const model::Snapshot& snapshot, model::FrameId frame) {
    const model::Frame& f = snapshot.frames[frame];
    std::string out(snapshot.str(f.name));
    const std::string_view file = snapshot.str(f.filename);
    if (file.empty() || file == "??") return out.empty() ? std::string("??") : out;
    out += " (";
    out += baseName(file);
    if (f.lineKnown && f.line > 0) out += ":" + std::to_string(f.line);
    out += ")";
    return out;
}

std::string longLabel(const model::Snapshot& snapshot, model::FrameId frame) {
    const model::Frame& f = snapshot.frames[frame];
    std::string out(snapshot.str(f.name));
    const std::string_view file = snapshot.str(f.filename);
    if (file.empty() || file == "??") return out;
    out += "  ";
    out += file;
    if (f.lineKnown && f.line > 0) out += ":" + std::to_string(f.line);
    return out;
}

std::string topFrameLabel(const model::Snapshot& snapshot, model::StackId stack) {
    const auto f = topFrame(snapshot, stack);
    return f ? label(snapshot, *f) : std::string();
}

} // namespace memlens::views::frames
