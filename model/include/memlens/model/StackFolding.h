#pragma once
// A stack as people want to read it: the user's frames shown, runs of native and library frames
// folded into one line each ("… 37 C++ frames", "… 5 frames in torch").
#include "memlens/model/FrameClassification.h"

#include <span>
#include <string>
#include <vector>

namespace memlens::model {

struct StackRow {
    bool folded = false;  // a run of frames shown as one line
    uint32_t first = 0;   // index of the first frame in the stack
    uint32_t count = 1;   // frames in this row (1 unless folded)
    FrameKind kind = FrameKind::User;
    std::string label;    // for folded rows: "… 37 C++ frames", "… 5 frames in torch"
};

struct FoldOptions {
    size_t minRun = 2;          // shorter runs stay unfolded
    bool foldNative = true;
    bool foldLibrary = true;
};

// Frames in stack order (innermost first). A run is a maximal sequence of consecutive native
// frames, or of consecutive library frames; mixed native and library frames are not one run.
std::vector<StackRow> foldStack(std::span<const FrameClass> frames, const FoldOptions& options = {});
std::vector<StackRow> foldStack(const Snapshot& snapshot, StackId stack, const FoldOptions& options = {});

// "… 37 C++ frames", "… 5 frames in torch", "… 4 frames in torch, python", "… 3 library frames"
// (library unknown).
std::string foldLabel(FrameKind kind, size_t count, std::string_view library);

} // namespace memlens::model
