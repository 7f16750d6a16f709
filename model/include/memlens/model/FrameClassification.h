#pragma once
// What kind of code a stack frame belongs to: the user's Python, a Python library (torch, the
// standard library, anything under site-packages), or native C/C++ code.
#include "memlens/model/Snapshot.h"

#include <string_view>
#include <vector>

namespace memlens::model {

enum class FrameKind : uint8_t {
    User,     // Python code outside any library: the user's own
    Library,  // Python under site-packages/, dist-packages/, /torch/, lib/python3.x/, or <frozen ...>
    Native,   // C/C++: filename '??' or '', a .c/.cpp/.h/.cu... file, or line 0 outside a .py file
};
const char* frameKindName(FrameKind k);

struct FrameClass {
    FrameKind kind = FrameKind::User;
    // For library frames the library's name: "torch", "transformers", "python" (the standard
    // library); empty otherwise.
    std::string_view library;
};

FrameClass classifyFrame(std::string_view filename, uint64_t line, bool lineKnown);
// A native frame of the machinery that records stacks and of the caching allocator itself
// (torch::unwind, torch::CapturedTraceback, gather_with_cpp, CUDACachingAllocator): on top of
// every mixed stack, saying nothing about who allocated.
bool isRecordingMachinery(std::string_view functionName);
FrameClass classifyFrame(const Snapshot& snapshot, FrameId frame);
// One entry per frame of the snapshot (index = FrameId); library names point into its strings.
std::vector<FrameClass> classifyFrames(const Snapshot& snapshot);

} // namespace memlens::model
