#include "memlens/model/FrameClassification.h"

#include <array>

namespace memlens::model {

namespace {

bool endsWith(std::string_view s, std::string_view suffix) {
    return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool isNativeFile(std::string_view f) {
    static constexpr std::array<std::string_view, 10> kSuffixes = {".cpp", ".cc", ".cxx", ".c", ".h",
                                                                   ".hpp", ".hh", ".cu", ".cuh", ".inl"};
    for (auto s : kSuffixes)
        if (endsWith(f, s)) return true;
    return false;
}

// The path component right after `marker`, without a ".py" suffix: site-packages/six.py -> six.
std::string_view componentAfter(std::string_view f, size_t pos) {
    std::string_view rest = f.substr(pos);
    size_t slash = rest.find('/');
    std::string_view c = rest.substr(0, slash);
    if (endsWith(c, ".py")) c.remove_suffix(3);
    return c;
}

} // namespace

const char* frameKindName(FrameKind k) {
    switch (k) {
    case FrameKind::User: return "user";
    case FrameKind::Library: return "library";
    case FrameKind::Native: return "native";
    }
    return "?";
}

FrameClass classifyFrame(std::string_view f, uint64_t line, bool lineKnown) {
    FrameClass c;
    const bool python = endsWith(f, ".py");
    if (!python && (f.empty() || f == "??" || isNativeFile(f) || (lineKnown && line == 0))) {
        c.kind = FrameKind::Native;
        return c;
    }
    for (std::string_view marker : {std::string_view("site-packages/"), std::string_view("dist-packages/")}) {
        size_t p = f.rfind(marker);
        if (p != std::string_view::npos) {
            c.kind = FrameKind::Library;
            c.library = componentAfter(f, p + marker.size());
            if (c.library.empty()) c.library = "python";
            return c;
        }
    }
    if (size_t p = f.rfind("/torch/"); p != std::string_view::npos || f.rfind("torch/", 0) == 0) {
        c.kind = FrameKind::Library;
        c.library = "torch";
        return c;
    }
    if (f.find("lib/python3") != std::string_view::npos || f.rfind("<frozen ", 0) == 0) {
        c.kind = FrameKind::Library;
        c.library = "python";
        return c;
    }
    return c;
}

bool isRecordingMachinery(std::string_view name) {
    static constexpr std::array<std::string_view, 5> kPrefixes = {
        "torch::unwind::", "torch::CapturedTraceback::", "torch::cuda::(anonymous namespace)::gather",
        "c10::cuda::CUDACachingAllocator::", "c10::CachingDeviceAllocator::"};
    for (auto p : kPrefixes)
        if (name.substr(0, p.size()) == p) return true;
    return false;
}

FrameClass classifyFrame(const Snapshot& s, FrameId id) {
    const Frame& fr = s.frames[id];
    return classifyFrame(s.str(fr.filename), fr.line, fr.lineKnown);
}

std::vector<FrameClass> classifyFrames(const Snapshot& s) {
    std::vector<FrameClass> out;
    out.reserve(s.frames.size());
    for (FrameId i = 0; i < s.frames.size(); ++i) out.push_back(classifyFrame(s, i));
    return out;
}

} // namespace memlens::model
