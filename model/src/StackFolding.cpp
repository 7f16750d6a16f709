#include "memlens/model/StackFolding.h"

#include <algorithm>

namespace memlens::model {

std::string foldLabel(FrameKind kind, size_t count, std::string_view library) {
    std::string n = std::to_string(count);
    const char* s = count == 1 ? "" : "s";
    if (kind == FrameKind::Native) return "\u2026 " + n + " C++ frame" + s;
    if (kind == FrameKind::Library && !library.empty()) return "\u2026 " + n + " frame" + s + " in " + std::string(library);
    if (kind == FrameKind::Library) return "\u2026 " + n + " library frame" + s;
    return "\u2026 " + n + " frame" + s;
}

std::vector<StackRow> foldStack(std::span<const FrameClass> frames, const FoldOptions& opt) {
    std::vector<StackRow> rows;
    const size_t n = frames.size();
    auto foldable = [&](FrameKind k) {
        return (k == FrameKind::Native && opt.foldNative) || (k == FrameKind::Library && opt.foldLibrary);
    };
    size_t i = 0;
    while (i < n) {
        const FrameKind k = frames[i].kind;
        size_t j = i + 1;
        if (foldable(k))
            while (j < n && frames[j].kind == k) ++j;
        if (j - i >= std::max<size_t>(opt.minRun, 1) && foldable(k)) {
            // the libraries of the run in order of appearance: "torch", "torch, python"
            std::string lib;
            std::vector<std::string_view> seen;
            for (size_t t = i; t < j; ++t) {
                std::string_view l = frames[t].library;
                if (l.empty() || std::find(seen.begin(), seen.end(), l) != seen.end()) continue;
                seen.push_back(l);
                if (seen.size() <= 3) lib += (lib.empty() ? "" : ", ") + std::string(l);
                else if (seen.size() == 4) lib += ", \u2026";
            }
            StackRow r;
            r.folded = true;
            r.first = static_cast<uint32_t>(i);
            r.count = static_cast<uint32_t>(j - i);
            r.kind = k;
            r.label = foldLabel(k, j - i, lib);
            rows.push_back(std::move(r));
        } else {
            for (size_t t = i; t < j; ++t) {
                StackRow r;
                r.first = static_cast<uint32_t>(t);
                r.kind = frames[t].kind;
                rows.push_back(std::move(r));
            }
        }
        i = j;
    }
    return rows;
}

std::vector<StackRow> foldStack(const Snapshot& s, StackId stack, const FoldOptions& opt) {
    std::vector<FrameClass> cls;
    if (stack < s.stackCount()) {
        cls.reserve(s.stackSize(stack));
        for (size_t i = 0; i < s.stackSize(stack); ++i) cls.push_back(classifyFrame(s, s.stackBegin(stack)[i]));
    }
    return foldStack(cls, opt);
}

} // namespace memlens::model
