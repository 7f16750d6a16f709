#pragma once
// Picking and naming the frames of a stack worth showing in one line: the allocator's own native
// frames and library internals (torch...) say little about who allocated; the first frame of the
// user's code says most. Frame kinds come from model::classifyFrame.
#include "memlens/model/Snapshot.h"

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace memlens::views::frames {

// Native frames of the unwinder and the interpreter (PyTorch's viewer hides the same ones).
bool isNoise(const model::Snapshot& snapshot, model::FrameId frame);
// A Python frame (user or library).
bool isPython(const model::Snapshot& snapshot, model::FrameId frame);
// A Python frame of a library: torch, the standard library, site-packages.
bool isLibrary(const model::Snapshot& snapshot, model::FrameId frame);

// The frame that best says where an allocation comes from: the innermost user frame; else the
// innermost library frame; else the innermost native frame that is not noise.
std::optional<model::FrameId> topFrame(const model::Snapshot& snapshot, model::StackId stack);
// Up to n frames of a stack, innermost first, noise removed.
std::vector<model::FrameId> usefulFrames(const model::Snapshot& snapshot, model::StackId stack, size_t n);

// "forward (model.py:40)"; the file's directory is dropped, native frames show only their name.
std::string label(const model::Snapshot& snapshot, model::FrameId frame);
// "forward  /home/me/model.py:40" with the full path, for tooltips.
std::string longLabel(const model::Snapshot& snapshot, model::FrameId frame);

// The label of topFrame(), or "" for an empty stack. Cached per stack by callers that need many.
std::string topFrameLabel(const model::Snapshot& snapshot, model::StackId stack);

} // namespace memlens::views::frames
