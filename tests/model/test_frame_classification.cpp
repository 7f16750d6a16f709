// Frame classification (user Python, library Python, native) and folding of native and library
// runs, on frames written the way real snapshots write them.
#include "Synthetic.h"

#include "memlens/model/ByteFormat.h"
#include "memlens/model/FrameClassification.h"
#include "memlens/model/StackFolding.h"

#include <gtest/gtest.h>

using namespace memlens::model;

namespace {

FrameClass cls(std::string_view file, uint64_t line = 10, bool known = true) { return classifyFrame(file, line, known); }

// "U", "L:torch", "N" per frame
std::string code(const FrameClass& c) {
    switch (c.kind) {
    case FrameKind::User: return "U";
    case FrameKind::Native: return "N";
    case FrameKind::Library: return "L:" + std::string(c.library);
    }
    return "?";
}

// "first+count:label" per row, label empty for single frames
std::vector<std::string> rows(const std::vector<StackRow>& rs) {
    std::vector<std::string> out;
    for (const auto& r : rs)
        out.push_back(std::to_string(r.first) + "+" + std::to_string(r.count) + (r.folded ? ":" + r.label : ""));
    return out;
}

} // namespace

TEST(FrameClassification, PythonUserFrames) {
    EXPECT_EQ(code(cls("/home/me/project/train.py")), "U");
    EXPECT_EQ(code(cls("train.py")), "U");
    EXPECT_EQ(code(cls("model.py", 0)), "U");  // a .py file stays Python whatever its line
    EXPECT_EQ(code(cls("/tmp/torchinductor_me/ab/cabc.py", 5)), "U");
    EXPECT_EQ(code(cls("<eval_with_key>.3", 7)), "U");
    EXPECT_EQ(code(cls("model.py", 0, false)), "U");
}

TEST(FrameClassification, LibraryFrames) {
    EXPECT_EQ(code(cls("/usr/lib/python3/dist-packages/torch/nn/modules/module.py")), "L:torch");
    EXPECT_EQ(code(cls("/opt/venv/lib/python3.11/site-packages/transformers/models/llama/modeling_llama.py")),
              "L:transformers");
    EXPECT_EQ(code(cls("/opt/venv/lib/python3.11/site-packages/six.py")), "L:six");
    EXPECT_EQ(code(cls("/usr/lib/python3.11/contextlib.py")), "L:python");
    EXPECT_EQ(code(cls("/home/me/src/pytorch/torch/autograd/graph.py")), "L:torch");
    EXPECT_EQ(code(cls("torch/_tensor.py")), "L:torch");
    EXPECT_EQ(code(cls("<frozen importlib._bootstrap>", 100)), "L:python");
}

TEST(FrameClassification, NativeFrames) {
    EXPECT_EQ(code(cls("??", 0)), "N");
    EXPECT_EQ(code(cls("", 0)), "N");
    EXPECT_EQ(code(cls("", 12)), "N");
    EXPECT_EQ(code(cls("CUDACachingAllocator.cpp", 0)), "N");
    EXPECT_EQ(code(cls("eval_frame.c", 0)), "N");
    EXPECT_EQ(code(cls("/build/Objects/call.c", 0)), "N");
    EXPECT_EQ(code(cls("./csu/../csu/libc-start.c", 0)), "N");
    EXPECT_EQ(code(cls("c10/util/Exception.h", 44)), "N");
    EXPECT_EQ(code(cls("kernel.cu", 3)), "N");
    EXPECT_EQ(code(cls("libtorch_cuda.so", 0)), "N");  // any file at line 0 outside .py
    EXPECT_EQ(code(cls("/usr/lib/python3/dist-packages/torch/lib/libtorch.so", 0)), "N");
    EXPECT_STREQ(frameKindName(FrameKind::Native), "native");
}

TEST(FrameClassification, RecordingMachinery) {
    EXPECT_TRUE(isRecordingMachinery("torch::unwind::unwind()"));
    EXPECT_TRUE(isRecordingMachinery("torch::CapturedTraceback::gather(bool, bool, bool)"));
    EXPECT_TRUE(isRecordingMachinery("torch::cuda::(anonymous namespace)::gather_with_cpp()"));
    EXPECT_TRUE(isRecordingMachinery(
        "c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc(unsigned long, CUstream_st*)"));
    EXPECT_FALSE(isRecordingMachinery("at::detail::empty_strided_cuda(c10::ArrayRef<long>)"));
    EXPECT_FALSE(isRecordingMachinery("torch::autograd::Engine::thread_main()"));
    EXPECT_FALSE(isRecordingMachinery("forward"));
}

TEST(StackFolding, RunsOfNativeAndLibraryFramesFold) {
    // innermost first: 3 native (allocator), 2 torch, user forward, 1 torch, user train, 2 python stdlib
    std::vector<FrameClass> f = {cls("??", 0),           cls("CUDACachingAllocator.cpp", 0),
                                 cls("", 0),             cls("/x/site-packages/torch/nn/functional.py"),
                                 cls("/x/site-packages/torch/nn/modules/linear.py"), cls("model.py"),
                                 cls("/x/site-packages/torch/nn/modules/module.py"), cls("train.py"),
                                 cls("/usr/lib/python3.11/runpy.py"), cls("/usr/lib/python3.11/runpy.py")};
    auto r = foldStack(f);
    EXPECT_EQ(rows(r), (std::vector<std::string>{"0+3:\u2026 3 C++ frames", "3+2:\u2026 2 frames in torch", "5+1",
                                                 "6+1", "7+1", "8+2:\u2026 2 frames in python"}));
    EXPECT_EQ(r[0].kind, FrameKind::Native);
    EXPECT_EQ(r[3].kind, FrameKind::Library);  // a single library frame stays a frame
    // the rows cover every frame once, in order
    uint32_t next = 0;
    for (const auto& row : r) {
        EXPECT_EQ(row.first, next);
        next += row.count;
    }
    EXPECT_EQ(next, f.size());
}

TEST(StackFolding, MixedLibrariesNameEach) {
    std::vector<FrameClass> f = {cls("/x/site-packages/torch/a.py"), cls("/usr/lib/python3.11/contextlib.py"),
                                 cls("/x/site-packages/torch/b.py")};
    EXPECT_EQ(rows(foldStack(f)), (std::vector<std::string>{"0+3:\u2026 3 frames in torch, python"}));
}

TEST(StackFolding, NativeAndLibraryRunsStaySeparate) {
    std::vector<FrameClass> f = {cls("??", 0), cls("??", 0), cls("/x/site-packages/torch/a.py"),
                                 cls("/x/site-packages/torch/b.py")};
    EXPECT_EQ(rows(foldStack(f)), (std::vector<std::string>{"0+2:\u2026 2 C++ frames", "2+2:\u2026 2 frames in torch"}));
}

TEST(StackFolding, OptionsAndEdges) {
    std::vector<FrameClass> f = {cls("??", 0), cls("??", 0), cls("??", 0), cls("u.py")};
    FoldOptions noNative;
    noNative.foldNative = false;
    EXPECT_EQ(rows(foldStack(f, noNative)), (std::vector<std::string>{"0+1", "1+1", "2+1", "3+1"}));
    FoldOptions longRuns;
    longRuns.minRun = 4;
    EXPECT_EQ(rows(foldStack(f, longRuns)), (std::vector<std::string>{"0+1", "1+1", "2+1", "3+1"}));
    FoldOptions single;
    single.minRun = 1;
    EXPECT_EQ(rows(foldStack(std::vector<FrameClass>{cls("??", 0)}, single)),
              (std::vector<std::string>{"0+1:\u2026 1 C++ frame"}));
    EXPECT_TRUE(foldStack(std::vector<FrameClass>{}).empty());
    EXPECT_EQ(foldLabel(FrameKind::Library, 5, ""), "\u2026 5 library frames");
}

TEST(StackFolding, FromASnapshotStack) {
    using namespace synth;
    P frames = list({frame("malloc", "??", 0), frame("allocate", "CUDACachingAllocator.cpp", 0),
                     frame("linear", "/v/lib/python3.11/site-packages/torch/nn/functional.py", 1),
                     frame("forward", "model.py", 10)});
    P seg = segment(0, 0x1000000, {{0x1000000, 2u << 20, 2u << 20, "active_allocated", frames}});
    Snapshot s = read(snapshot({seg}, {{}}));
    StackId stack = s.devices[0].blocks[0].stack;
    ASSERT_NE(stack, 0u);
    EXPECT_EQ(rows(foldStack(s, stack)), (std::vector<std::string>{"0+2:\u2026 2 C++ frames", "2+1", "3+1"}));
    EXPECT_TRUE(foldStack(s, 0).empty());
    auto all = classifyFrames(s);
    ASSERT_EQ(all.size(), s.frames.size());
    EXPECT_EQ(all[s.stackBegin(stack)[2]].library, "torch");
}

TEST(ByteFormat, Units) {
    EXPECT_EQ(formatBytes(0), "0 B");
    EXPECT_EQ(formatBytes(512), "512 B");
    EXPECT_EQ(formatBytes(1024), "1 KiB");
    EXPECT_EQ(formatBytes(1536), "1.5 KiB");
    EXPECT_EQ(formatBytes(180ull << 20), "180 MiB");
    EXPECT_EQ(formatBytes(16ull * (1 << 20) + (1 << 19)), "16.5 MiB");
    EXPECT_EQ(formatBytes(3328599654ull), "3.1 GiB");
    EXPECT_EQ(formatBytes((1ull << 30) - 1), "1 GiB");
    EXPECT_EQ(formatBytes(1ull << 40), "1 TiB");
    EXPECT_EQ(formatSignedBytes(-(4ll << 20)), "-4 MiB");
    EXPECT_EQ(formatSignedBytes(1536ll << 20), "+1.5 GiB");
}
