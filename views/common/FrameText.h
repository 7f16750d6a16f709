#pragma once
// How the stack and sites views write a frame: its function, and where it is ("model.py:42",
// "torch/nn/modules/module.py:1747", "CUDACachingAllocator.cpp"), short for columns and in full
// for tooltips and the clipboard.
#include "memlens/model/Snapshot.h"

#include <QString>

#include <string_view>

namespace memlens::views::frametext {

// A path as a column shows it: what follows site-packages/ (or dist-packages/, lib/python3.x/),
// else at most the last three components after "…/".
QString shortPath(std::string_view path);

QString function(const model::Snapshot& snapshot, model::FrameId frame);
// "file:line", "file:unknown" where the line is unknown, the bare file for native frames at line
// 0, "" for native frames without a file ('??' or '').
QString location(const model::Snapshot& snapshot, model::FrameId frame, bool fullPath = false);
// "function (full/path.py:line)" on one line, for copying.
QString oneLine(const model::Snapshot& snapshot, model::FrameId frame);

} // namespace memlens::views::frametext
