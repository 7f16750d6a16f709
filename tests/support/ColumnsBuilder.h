#pragma once
// A snapshot built column by column, without a pickle: frames, stacks (innermost first) and trace
// entries of device 0; and the long random trace of the allocation-sites test and benchmark.
#include "memlens/model/Snapshot.h"

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace sitestest {

using namespace memlens::model;

// A snapshot built directly: frames named f0, f1, ... and the given stacks (innermost first).
struct ColumnsBuilder {
    Snapshot s;
    FrameId frame(const std::string& name, const std::string& file, uint64_t line) {
        Frame f;
        f.name = s.strings.intern(name);
        f.filename = s.strings.intern(file);
        f.line = line;
        s.frames.push_back(f);
        return static_cast<FrameId>(s.frames.size() - 1);
    }
    StackId stack(const std::vector<FrameId>& frames) {
        s.stackFrames.insert(s.stackFrames.end(), frames.begin(), frames.end());
        s.stackOffsets.push_back(static_cast<uint32_t>(s.stackFrames.size()));
        return static_cast<StackId>(s.stackOffsets.size() - 2);
    }
    TraceColumns& trace() {
        if (s.devices.empty()) s.devices.emplace_back();
        return s.devices[0].trace;
    }
    void entry(Action a, uint64_t addr, uint64_t size, StackId stack) {
        TraceColumns& t = trace();
        t.action.push_back(a);
        t.actionName.push_back(0);
        t.flags.push_back(TraceColumns::HasAddr);
        t.addr.push_back(addr);
        t.size.push_back(size);
        t.stream.push_back(0);
        t.timeUs.push_back(-1);
        t.stack.push_back(stack);
        t.compileContext.push_back(0);
        t.userMetadata.push_back(0);
    }
};

// PAIRS alloc/free_requested pairs of 4096 bytes over 20,000 addresses, each from one of 3000
// stacks of 40 frames (600 distinct frames), seeded.
inline void longRandomTrace(ColumnsBuilder& b, int pairs) {
    std::mt19937_64 rng(7);
    std::vector<FrameId> frames;
    for (int i = 0; i < 600; ++i) frames.push_back(b.frame("f" + std::to_string(i), "x.py", i + 1));
    std::vector<StackId> stacks;
    for (int i = 0; i < 3000; ++i) {
        std::vector<FrameId> st;
        for (int d = 0; d < 40; ++d) st.push_back(frames[(i * 7 + d * d + rng() % 3) % frames.size()]);
        stacks.push_back(b.stack(st));
    }
    b.trace().reserve(static_cast<size_t>(pairs) * 2);
    for (int i = 0; i < pairs; ++i) {
        uint64_t addr = 0x1000 + static_cast<uint64_t>(i % 20000) * 512;
        StackId st = stacks[rng() % stacks.size()];
        b.entry(Action::Alloc, addr, 4096, st);
        b.entry(Action::FreeRequested, addr, 4096, st);
    }
}

} // namespace sitestest
