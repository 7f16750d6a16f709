// The snapshot reader on synthetic files of every layout, and on the real snapshots.
#include "Oracle.h"
#include "RealSnapshots.h"
#include "Synthetic.h"

#include "memlens/model/ParseError.h"
#include "memlens/model/SnapshotStats.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>

#include <unistd.h>

using namespace memlens::model;
using namespace synth;

namespace {

std::string errorOf(const std::string& bytes) {
    try {
        read(bytes);
    } catch (const ParseError& e) {
        return e.describe("f.pickle");
    }
    return "accepted";
}

std::string frameText(const Snapshot& s, FrameId f) {
    return std::string(s.str(s.frames[f].name)) + "@" + std::string(s.str(s.frames[f].filename)) + ":" +
           std::to_string(s.frames[f].line);
}

std::vector<std::string> stackText(const Snapshot& s, StackId id) {
    std::vector<std::string> out;
    for (size_t i = 0; i < s.stackSize(id); ++i) out.push_back(frameText(s, s.stackBegin(id)[i]));
    return out;
}

P exampleSnapshot(P shared) {
    P fa = frame("forward", "model.py", 10);
    P fb = frame("train", "train.py", 99);
    P stackA = list({fa, fb});
    P stackA2 = list({fa, fb});  // same frames, another list object: must intern to the same stack
    return snapshot({segment(0, 0x7f0000000000,
                             {{0x7f0000000000, 1024, 1000, "active_allocated", stackA},
                              {0x7f0000000400, 2096128, 0, "inactive", nullptr}})},
                    {{entry("segment_alloc", 0x7f0000000000, 2097152, nullptr, 1700000000000000),
                      entry("alloc", 0x7f0000000000, 1000, stackA2, 1700000000000010),
                      entry("alloc", 0x7f0000000400, 4000, shared, 1700000000000020),
                      entry("free_requested", 0x7f0000000400, 4000, shared, 1700000000000030),
                      entry("free_completed", 0x7f0000000400, 4000, shared, 1700000000000040)}});
}

} // namespace

TEST(SnapshotReader, DictLayoutInEveryProtocol) {
    P shared = list({frame("step", "adamw.py", 5)});
    P snap = exampleSnapshot(shared);
    for (int proto : {0, 1, 2, 3, 4, 5}) {
        SCOPED_TRACE(proto);
        Snapshot s = read(snap, proto);
        EXPECT_EQ(s.layout, Layout::Dict);
        ASSERT_EQ(s.devices.size(), 1u);
        const DeviceData& d = s.devices[0];
        ASSERT_EQ(d.segments.size(), 1u);
        EXPECT_EQ(d.segments[0].address, 0x7f0000000000u);
        EXPECT_EQ(d.segments[0].totalSize, 2097152u);
        ASSERT_EQ(d.blocks.size(), 2u);
        EXPECT_EQ(d.blocks[0].state, BlockState::ActiveAllocated);
        EXPECT_EQ(d.blocks[1].address, 0x7f0000000400u);
        EXPECT_EQ(d.blocks[1].state, BlockState::Inactive);
        ASSERT_EQ(d.trace.rows(), 5u);
        EXPECT_EQ(d.trace.action[0], Action::SegmentAlloc);
        EXPECT_EQ(d.trace.action[4], Action::FreeCompleted);
        EXPECT_EQ(d.trace.size[2], 4000u);
        EXPECT_EQ(d.trace.timeUs[3], 1700000000000030);
        EXPECT_EQ(d.trace.stack[1], d.blocks[0].stack);  // identical stacks are stored once
        EXPECT_EQ(stackText(s, d.trace.stack[1]), (std::vector<std::string>{"forward@model.py:10", "train@train.py:99"}));
        EXPECT_EQ(stackText(s, d.trace.stack[3]), (std::vector<std::string>{"step@adamw.py:5"}));
        EXPECT_EQ(d.trace.stack[0], 0u);
        EXPECT_EQ(s.frames.size(), 3u);
        ASSERT_EQ(s.allocatorSettings.size(), 2u);
        EXPECT_EQ(s.allocatorSettings[1].second, "-1");
    }
}

// External annotations: a dict of exactly stage, name, device and time_us (any order) becomes an
// annotation as it is read; any other dict is read by the tree as before (an extra key ignored, a
// device that is not an int read as 0, no name: a warning). The order is the list's.
TEST(SnapshotReader, AnnotationsReadAsTheyComplete) {
    P shared = dict({{"stage", str("START")}, {"name", str("ProfilerStep#2")}, {"device", num(0)}, {"time_us", num(600)}});
    P snap = dict({{"segments", list()},
                   {"device_traces", list({list()})},
                   {"external_annotations",
                    list({dict({{"stage", str("START")}, {"name", str("ProfilerStep#1")}, {"device", num(0)}, {"time_us", num(100)}}),
                          dict({{"name", str("ProfilerStep#1")}, {"stage", str("END")}, {"time_us", num(200)}, {"device", num(1)}}),
                          dict({{"stage", str("START")}, {"name", str("x")}, {"device", num(0)}, {"time_us", num(300)}, {"extra", num(1)}}),
                          dict({{"stage", str("START")}, {"device", num(0)}, {"time_us", num(400)}}),
                          dict({{"stage", str("END")}, {"name", str("y")}, {"device", str("cuda")}, {"time_us", num(500)}}),
                          shared, shared})}});
    struct Want {
        bool start;
        const char* name;
        int device;
        int64_t time;
    };
    const Want want[] = {{true, "ProfilerStep#1", 0, 100}, {false, "ProfilerStep#1", 1, 200}, {true, "x", 0, 300},
                         {false, "y", 0, 500},           {true, "ProfilerStep#2", 0, 600},  {true, "ProfilerStep#2", 0, 600}};
    for (int protocol : {2, 4}) {
        Snapshot s = read(snap, protocol);
        ASSERT_EQ(s.annotations.size(), std::size(want)) << "protocol " << protocol;
        for (size_t i = 0; i < std::size(want); ++i) {
            const Annotation& a = s.annotations[i];
            EXPECT_EQ(a.start, want[i].start) << i;
            EXPECT_EQ(s.strings.view(a.name), want[i].name) << i;
            EXPECT_EQ(a.device, want[i].device) << i;
            EXPECT_EQ(a.timeUs, want[i].time) << i;
        }
        EXPECT_NE(std::find(s.warnings.begin(), s.warnings.end(), "external_annotations[3] has no stage or name; ignored"),
                  s.warnings.end());
    }
}

TEST(SnapshotReader, Legacy20BlocksWithHistoryAndNoAddress) {
    P f = frame("forward", "m.py", 3);
    auto legacyBlock = [&](uint64_t size, uint64_t req, const char* state, bool hist) {
        std::vector<std::pair<std::string, P>> kv = {
            {"size", unum(size)}, {"requested_size", unum(req)}, {"state", str(state)}};
        kv.emplace_back("history", hist ? list({dict({{"addr", unum(0)}, {"real_size", unum(req)}, {"frames", list({f})}})})
                                        : list());
        return dict(kv);
    };
    P seg = dict({{"device", num(0)}, {"address", unum(0x1000000)}, {"total_size", unum(3072)},
                  {"allocated_size", unum(2048)}, {"active_size", unum(2048)}, {"requested_size", unum(1800)},
                  {"stream", num(0)}, {"segment_type", str("small")},
                  {"blocks", list({legacyBlock(512, 500, "inactive", false), legacyBlock(2048, 1800, "active_allocated", true),
                                   legacyBlock(512, 0, "inactive", false)})}});
    P root = dict({{"segments", list({seg})},
                   {"device_traces", list({list({dict({{"action", str("snapshot")}, {"addr", num(0)}, {"size", num(2048)},
                                                       {"stream", num(0)}})})})}});
    Snapshot s = read(root, 4);
    EXPECT_EQ(s.layout, Layout::Legacy20);
    const DeviceData& d = s.devices[0];
    ASSERT_EQ(d.blocks.size(), 3u);
    EXPECT_EQ(d.blocks[0].address, 0x1000000u);
    EXPECT_EQ(d.blocks[1].address, 0x1000000u + 512);
    EXPECT_EQ(d.blocks[2].address, 0x1000000u + 2560);
    EXPECT_EQ(stackText(s, d.blocks[1].stack), std::vector<std::string>{"forward@m.py:3"});
    EXPECT_EQ(d.trace.timeUs[0], -1);
    EXPECT_FALSE(d.trace.flags[0] & TraceColumns::HasTime);
    EXPECT_TRUE(s.warnings.empty());
}

TEST(SnapshotReader, BareListOfSegmentsOnDevice1) {
    P root = list({segment(1, 0x2000, {{0x2000, 512, 100, "active_allocated", nullptr}}),
                   segment(1, 0x1000, {{0x1000, 1024, 0, "inactive", nullptr}})});
    Snapshot s = read(root, 4);
    EXPECT_EQ(s.layout, Layout::BareSegmentList);
    ASSERT_EQ(s.devices.size(), 1u);
    EXPECT_EQ(s.devices[0].device, 1);
    ASSERT_EQ(s.devices[0].segments.size(), 2u);
    EXPECT_EQ(s.devices[0].segments[0].address, 0x1000u);  // address order
    EXPECT_EQ(s.devices[0].blocks[s.devices[0].segments[1].firstBlock].requestedSize, 100u);
}

TEST(SnapshotReader, SeveralDevicesOomAndWideFrameLines) {
    P cpp = frame("c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc(signed char, unsigned long, "
                  "CUstream_st*) with a name longer than two hundred and fifty five bytes, which torch writes as "
                  "BINUNICODE rather than SHORT_BINUNICODE: " + std::string(200, 'x'),
                  "??", 0);
    P wide = dict({{"name", str("init_gpu_context")}, {"filename", str("fake_tensor.py")}, {"line", unum(~uint64_t(0))}});
    P oom = dict({{"action", str("oom")}, {"size", unum(1 << 30)}, {"stream", num(0)}, {"device_free", unum(123456)},
                  {"frames", list({cpp, wide})}});
    P root = snapshot({segment(2, 0x5000, {{0x5000, 512, 512, "active_allocated", nullptr}})},
                      {{}, {entry("alloc", 0x9000, 10)}, {}, {oom, entry("snapshot", 0, 512)}});
    Snapshot s = read(root, 4);
    auto st = computeStats(s);
    ASSERT_EQ(st.size(), 3u);  // devices 1, 2, 3; 0 has neither segments nor entries
    EXPECT_EQ(st[0].device, 1);
    EXPECT_EQ(st[0].traceEvents, 1u);
    EXPECT_EQ(st[1].device, 2);
    EXPECT_EQ(st[1].segments, 1u);
    EXPECT_EQ(st[2].device, 3);
    EXPECT_EQ(st[2].actions.at("oom"), 1u);
    const DeviceData* d3 = s.device(3);
    ASSERT_TRUE(d3);
    EXPECT_EQ(d3->trace.action[0], Action::Oom);
    EXPECT_FALSE(d3->trace.flags[0] & TraceColumns::HasAddr);
    EXPECT_TRUE(d3->trace.flags[0] & TraceColumns::HasDeviceFree);
    EXPECT_EQ(d3->trace.addr[0], 123456u);
    ASSERT_EQ(s.stackSize(d3->trace.stack[0]), 2u);
    const Frame& w = s.frames[s.stackBegin(d3->trace.stack[0])[1]];
    EXPECT_FALSE(w.lineKnown);
    EXPECT_EQ(w.line, ~uint64_t(0));
    EXPECT_EQ(s.str(s.frames[s.stackBegin(d3->trace.stack[0])[0]].filename), "??");
}

TEST(SnapshotReader, LongStacksInSeveralBatches) {
    std::vector<P> frames;
    for (int i = 0; i < 2500; ++i) frames.push_back(frame("f" + std::to_string(i), "deep.py", i));
    P fl = list(frames);
    P root = snapshot({}, {{entry("alloc", 0x1000, 10, fl), entry("free_completed", 0x1000, 10, list(frames))}});
    for (int proto : {0, 2, 4}) {
        Snapshot s = read(root, proto);
        const DeviceData& d = s.devices[0];
        ASSERT_EQ(s.stackSize(d.trace.stack[0]), 2500u) << proto;
        EXPECT_EQ(d.trace.stack[0], d.trace.stack[1]) << proto;
        EXPECT_EQ(frameText(s, s.stackBegin(d.trace.stack[0])[2499]), "f2499@deep.py:2499");
    }
}

TEST(SnapshotReader, MistakesNameTheirPlace) {
    P noSize = snapshot({dict({{"device", num(0)}, {"address", num(4096)}, {"total_size", num(512)},
                               {"blocks", list({dict({{"state", str("inactive")}})})}})},
                        {});
    EXPECT_EQ(errorOf(dumps(noSize)), "f.pickle: segments[0]['blocks'][0]: missing key 'size' (expected an int)");
    P segStr = dict({{"segments", str("nope")}, {"device_traces", list()}});
    EXPECT_EQ(errorOf(dumps(segStr)), "f.pickle: segments: expected a list of segment dicts, found a str");
    P badAction = snapshot({}, {{dict({{"action", num(3)}, {"addr", num(0)}, {"size", num(1)}})}});
    EXPECT_EQ(errorOf(dumps(badAction)), "f.pickle: device_traces[0][0]['action']: expected a str");
    P badState = snapshot({segment(0, 4096, {{4096, 512, 0, "sleeping", nullptr}})}, {});
    EXPECT_EQ(errorOf(dumps(badState)), "f.pickle: segments[0]['blocks'][0]['state']: unknown block state 'sleeping'");
    P negative = snapshot({dict({{"device", num(0)}, {"address", num(4096)}, {"total_size", num(-5)}, {"blocks", list()}})}, {});
    EXPECT_EQ(errorOf(dumps(negative)), "f.pickle: segments[0]['total_size']: expected a non-negative int, found -5");
    // deeper places, each spelled out only when it is wrong
    auto block = [](P frames) {
        return dict({{"size", num(512)}, {"state", str("inactive")}, {"frames", frames}});
    };
    auto seg = [](int64_t device, std::vector<P> blocks) {
        return dict({{"device", num(device)}, {"address", num(4096)}, {"total_size", num(512 * int64_t(blocks.size()))},
                     {"blocks", list(blocks)}});
    };
    P badFrames = snapshot({seg(0, {block(list())}), seg(0, {block(list()), block(list()), block(str("f"))})}, {});
    EXPECT_EQ(errorOf(dumps(badFrames)), "f.pickle: segments[1]['blocks'][2]['frames']: expected a list of frame dicts "
                                         "{filename, name, line}, found a str");
    P farDevice = snapshot({seg(70000, {})}, {});
    EXPECT_EQ(errorOf(dumps(farDevice)), "f.pickle: segments[0]['device']: device index 70000 is out of range");
    P badHistory = snapshot({dict({{"device", num(0)}, {"address", num(4096)}, {"total_size", num(512)},
                                   {"blocks", list({dict({{"size", num(512)}, {"state", str("active_allocated")},
                                                          {"history", list({dict({{"frames", num(7)}})})}})})}})},
                            {});
    EXPECT_EQ(errorOf(dumps(badHistory)), "f.pickle: segments[0]['blocks'][0]['history'][0]['frames']: expected a list "
                                          "of frame dicts {filename, name, line}, found a int");
    P hostState = dict({{"segments", list()}, {"device_traces", list()},
                        {"host_segments", list({dict({{"address", num(4096)}, {"total_size", num(1024)},
                                                      {"blocks", list({block(list()), dict({{"size", num(512)},
                                                                                            {"state", str("x")}})})}})})}});
    EXPECT_EQ(errorOf(dumps(hostState)), "f.pickle: host_segments[0]['blocks'][1]['state']: unknown block state 'x'");
    P bareList = list({seg(0, {block(list())}), dict({{"device", num(0)}, {"address", num(0)}, {"total_size", num(0)}})});
    EXPECT_EQ(errorOf(dumps(bareList)), "f.pickle: [1]: missing key 'blocks' (expected a list of block dicts)");
    P phrases = dict({{"hello", str("world")}});
    EXPECT_NE(errorOf(dumps(phrases)).find("not a PyTorch memory snapshot: the dict has no 'segments' key"),
              std::string::npos);
    EXPECT_NE(errorOf(dumps(num(3))).find("the pickle holds a int"), std::string::npos);
    EXPECT_EQ(errorOf(""), "f.pickle: byte 0: empty file; expected a PyTorch memory snapshot pickle");
    // memory_viz's JSON form is read (tests/cli/test_compressed.py compares it with the oracle);
    // broken JSON says where
    EXPECT_EQ(errorOf("  {\"segments\": []}"), "accepted");
    EXPECT_NE(errorOf("  {\"segments\": [{\"device\": 0,").find("JSON snapshot: parse error at line 1"), std::string::npos);
    EXPECT_NE(errorOf(std::string("PK\x03\x04rest", 8)).find("zip"), std::string::npos);
    EXPECT_NE(errorOf(std::string("\x1f\x8b\x08\x00", 4)).find("gzip"), std::string::npos);
}

TEST(SnapshotReader, InvariantViolationsAreWarningsNotErrors) {
    P seg = dict({{"device", num(0)}, {"address", num(4096)}, {"total_size", num(4096)}, {"allocated_size", num(0)},
                  {"active_size", num(0)}, {"blocks", list({block({4096, 512, 0, "inactive", nullptr})})}});
    Snapshot s = read(snapshot({seg}, {}));
    ASSERT_EQ(s.warnings.size(), 1u);
    EXPECT_NE(s.warnings[0].find("block sizes add up to 512, total_size is 4096"), std::string::npos);
}

// A trace list keeps rows appended in order as a range; an entry object listed twice (a memo get
// of the same row) breaks the range, and every protocol still gives the entries in list order.
TEST(SnapshotReader, TraceListWithAnEntryListedTwice) {
    P fl = list({frame("f", "m.py", 1)});
    P first = entry("alloc", 0x1000, 10, fl, 1);
    P root = snapshot({}, {{first, entry("alloc", 0x2000, 20, fl, 2), first,
                            entry("free_requested", 0x2000, 20, fl, 3)}});
    for (int proto : {0, 2, 4}) {
        SCOPED_TRACE(proto);
        Snapshot s = read(root, proto);
        const TraceColumns& t = s.devices.at(0).trace;
        EXPECT_EQ(t.addr, (memlens::model::AddressColumn{0x1000, 0x2000, 0x1000, 0x2000}));
        EXPECT_EQ(t.timeUs, (memlens::model::TimeColumn{1, 2, 1, 3}));
    }
}

// Frames lists of the same bytes are absorbed once and then recognised; a PUT over the memo slot
// of a frame in between makes the same bytes name another frame, as in Python.
TEST(SnapshotReader, AFrameSlotRewrittenBetweenTwoEqualFramesLists) {
    auto s = [](const std::string& t) { return "\x8c" + std::string(1, char(t.size())) + t; };
    auto frame = [&](char memo, const std::string& name) {
        return "}q" + std::string(1, memo) + "(" + s("filename") + s("m.py") + s("name") + s(name) + s("line") +
               "K\x07u";
    };
    std::string entry = "}(" + s("action") + s("alloc") + s("addr") + "K\x01" + s("size") + "K\x02" + s("frames") +
                        "](h\x01h\x02" "eu";  // "\x02e" would be one escape
    std::string bytes = "\x80\x04}(" + s("pool") + "(" + frame(1, "f0") + frame(2, "f1") + frame(3, "f2") + "l" +
                        s("segments") + "]" + s("device_traces") + "](](" + entry + "h\x03q\x01" + "0" + entry +
                        "eeu.";
    Snapshot snap = read(bytes);
    const TraceColumns& t = snap.devices.at(0).trace;
    ASSERT_EQ(t.rows(), 2u);
    EXPECT_EQ(stackText(snap, t.stack[0]), (std::vector<std::string>{"f0@m.py:7", "f1@m.py:7"}));
    EXPECT_EQ(stackText(snap, t.stack[1]), (std::vector<std::string>{"f2@m.py:7", "f1@m.py:7"}));
}

// Frames lists recalled as the one that followed the last list the time before (a loop's
// iterations repeat their stacks in order) are what their own bytes say when the order changes:
// a list predicted but one frame longer or shorter, or another list entirely, is read as itself.
TEST(SnapshotReader, FramesListsRecalledInTheirUsualOrderOrNotReadAsThemselves) {
    P f1 = frame("step", "opt.py", 1), f2 = frame("forward", "model.py", 2), f3 = frame("loss", "train.py", 3);
    const std::map<char, std::vector<P>> lists = {{'A', {f1, f2}}, {'B', {f1, f2, f3}}, {'C', {f3, f1}}, {'D', {f1}}};
    const std::string order = "ABABABAABBCABCBADAAB";  // learnt first, then broken in every way
    std::vector<P> entries;
    for (size_t i = 0; i < order.size(); ++i)
        entries.push_back(entry("alloc", 0x1000 + 0x100 * i, 256, list(lists.at(order[i])), int64_t(i)));  // a new list each
    for (int proto : {2, 4}) {
        SCOPED_TRACE(proto);
        const Snapshot snap = read(snapshot({}, {entries}), proto);
        const TraceColumns& t = snap.devices.at(0).trace;
        ASSERT_EQ(t.rows(), order.size());
        for (size_t i = 0; i < order.size(); ++i) {
            std::vector<std::string> want;
            for (const P& f : lists.at(order[i]))
                want.push_back(f->kv[0].second->s + "@" + f->kv[1].second->s + ":" + std::to_string(f->kv[2].second->i));
            EXPECT_EQ(stackText(snap, t.stack[i]), want) << "entry " << i << " (" << order[i] << ")";
        }
    }
}

// Files are read in chunks of a few MB on a second thread: values that straddle chunks, and
// one longer than a chunk, read as from memory; a truncated file fails the same way.
TEST(SnapshotReader, FilesReadInChunksGiveWhatMemoryGives) {
    std::vector<P> entries;
    P frames = list({frame(std::string(5 << 20, 'x'), "huge.py", 1), frame("step", "adamw.py", 5)});
    for (int i = 0; i < 60000; ++i)
        entries.push_back(entry(i % 2 ? "free_completed" : "alloc", 0x7f0000000000 + 512 * uint64_t(i), 512 + i,
                                i % 3 ? frames : list({frame("f" + std::to_string(i % 700), "m.py", i)}), i));
    std::string bytes = dumps(snapshot({}, {entries}), 4);
    ASSERT_GT(bytes.size(), 10u << 20);
    auto path = std::filesystem::temp_directory_path() / ("memlens-chunks-" + std::to_string(::getpid()) + ".pickle");
    auto write = [&](size_t n) { std::ofstream(path, std::ios::binary).write(bytes.data(), std::streamsize(n)); };
    write(bytes.size());
    Snapshot fromFile = readSnapshotFile(path.string());
    Snapshot fromMemory = read(bytes);
    const TraceColumns& f = fromFile.devices.at(0).trace;
    const TraceColumns& m = fromMemory.devices.at(0).trace;
    ASSERT_EQ(f.rows(), 60000u);
    EXPECT_EQ(f.addr, m.addr);
    EXPECT_EQ(f.size, m.size);
    EXPECT_EQ(f.timeUs, m.timeUs);
    EXPECT_EQ(f.stack, m.stack);
    EXPECT_EQ(fromFile.stackFrames, fromMemory.stackFrames);
    EXPECT_EQ(fromFile.str(fromFile.frames[fromFile.stackBegin(f.stack[1])[0]].name).size(), size_t(5) << 20);
    write(bytes.size() - 100);
    std::string fileError, memoryError;
    try {
        readSnapshotFile(path.string());
    } catch (const ParseError& e) {
        fileError = e.describe("f.pickle");
    }
    try {
        read(bytes.substr(0, bytes.size() - 100));
    } catch (const ParseError& e) {
        memoryError = e.describe("f.pickle");
    }
    std::filesystem::remove(path);
    EXPECT_NE(fileError, "");
    EXPECT_EQ(fileError, memoryError);
}

// A file loads with progress rising to 1 while its chunks are read ahead on another thread, and a
// cancel from the progress callback stops the load (the read-ahead thread is stopped with it).
TEST(SnapshotReader, FileLoadReportsProgressAndCancels) {
    std::vector<P> entries;
    P frames = list({frame("step", "adamw.py", 5), frame("train", "train.py", 9)});
    for (int i = 0; i < 60000; ++i)
        entries.push_back(entry("alloc", 0x7f0000000000 + 512 * uint64_t(i), 512, frames, i));
    std::string bytes = dumps(snapshot({}, {entries}), 4);
    ASSERT_GT(bytes.size(), 4u << 20);  // several chunks
    auto path = std::filesystem::temp_directory_path() / ("memlens-progress-" + std::to_string(::getpid()) + ".pickle");
    std::ofstream(path, std::ios::binary).write(bytes.data(), std::streamsize(bytes.size()));
    std::vector<double> reading;
    LoadOptions options;
    options.progress = [&](const char* phase, double f) {
        if (std::string(phase) == "reading") reading.push_back(f);
    };
    EXPECT_EQ(readSnapshotFile(path.string(), options).devices.at(0).trace.rows(), 60000u);
    ASSERT_GE(reading.size(), 3u);
    EXPECT_TRUE(std::is_sorted(reading.begin(), reading.end()));
    EXPECT_EQ(reading.back(), 1.0);
    std::atomic<bool> cancel{false};
    options.cancel = &cancel;
    options.progress = [&](const char*, double) { cancel = true; };
    EXPECT_THROW(readSnapshotFile(path.string(), options), Cancelled);
    std::filesystem::remove(path);
}

TEST(SnapshotReader, EveryRealSnapshotLoadsAndKeepsItsInvariants) {
    auto files = realSnapshots();
    if (files.empty()) GTEST_SKIP() << "real snapshots not found in " << MEMLENS_SNAPSHOTS_DIR;
    for (const auto& f : files) {
        SCOPED_TRACE(f.string());
        Snapshot s = readSnapshotFile(f.string());
        EXPECT_TRUE(s.warnings.empty()) << (s.warnings.empty() ? "" : s.warnings[0]);
        for (const auto& d : s.devices)
            for (size_t i = 0; i < d.trace.rows(); ++i) {
                ASSERT_LT(d.trace.stack[i], s.stackCount());
                ASSERT_LE(s.stackOffsets[d.trace.stack[i] + 1], s.stackFrames.size());
            }
    }
}

// Block dicts are read as they complete (BlockRows) when they are the usual five keys, and by the
// tree otherwise: both give the same blocks, and a mistake in either is named where it is.
TEST(SnapshotReader, BlocksOfEveryFormReadTheSame) {
    const uint64_t a = 0x10000;
    P f = frame("forward", "m.py", 3), g = frame("step", "opt.py", 9);
    P blocks = list({
        dict({{"size", num(512)}, {"requested_size", num(500)}, {"state", str("active_allocated")}, {"address", unum(a)},
              {"frames", list({f})}}),
        dict({{"size", num(512)}, {"requested_size", none()}, {"state", str("active_awaiting_free")}, {"address", unum(a + 512)},
              {"frames", list()}}),
        dict({{"size", num(1024)}, {"state", str("inactive")}, {"address", unum(a + 1024)}, {"future_key", num(1)},
              {"frames", list({g, f})}}),
        dict({{"size", num(512)}, {"requested_size", num(512)}, {"state", str("active_pending_free")}}),  // no address
    });
    P seg = dict({{"device", num(0)}, {"address", unum(a)}, {"total_size", num(2560)}, {"allocated_size", num(512)},
                  {"active_size", num(1536)}, {"blocks", blocks}});
    for (int proto : {2, 4}) {
        Snapshot s = read(snapshot({seg}, {}), proto);
        const DeviceData& d = s.devices[0];
        ASSERT_EQ(d.blocks.size(), 4u) << proto;
        const uint64_t addr[] = {a, a + 512, a + 1024, a + 2048}, size[] = {512, 512, 1024, 512}, req[] = {500, 0, 0, 512};
        const BlockState state[] = {BlockState::ActiveAllocated, BlockState::ActivePendingFree, BlockState::Inactive,
                                    BlockState::ActivePendingFree};
        for (size_t i = 0; i < 4; ++i) {
            EXPECT_EQ(d.blocks[i].address, addr[i]) << proto << " block " << i;
            EXPECT_EQ(d.blocks[i].size, size[i]) << proto << " block " << i;
            EXPECT_EQ(d.blocks[i].requestedSize, req[i]) << proto << " block " << i;
            EXPECT_EQ(d.blocks[i].state, state[i]) << proto << " block " << i;
        }
        EXPECT_EQ(stackText(s, d.blocks[0].stack), std::vector<std::string>{"forward@m.py:3"});
        EXPECT_EQ(d.blocks[1].stack, 0u);
        EXPECT_EQ(stackText(s, d.blocks[2].stack), (std::vector<std::string>{"step@opt.py:9", "forward@m.py:3"}));
        EXPECT_TRUE(s.warnings.empty()) << s.warnings.front();
    }
    P negative = snapshot({dict({{"device", num(0)}, {"address", unum(a)}, {"total_size", num(512)},
                                 {"blocks", list({dict({{"size", num(512)}, {"state", str("inactive")}, {"address", unum(a)}}),
                                                  dict({{"size", num(-3)}, {"state", str("inactive")}, {"address", unum(a + 512)}})})}})},
                          {});
    EXPECT_EQ(errorOf(dumps(negative)), "f.pickle: segments[0]['blocks'][1]['size']: expected a non-negative int, found -3");
    P badFrames = snapshot({dict({{"device", num(0)}, {"address", unum(a)}, {"total_size", num(512)},
                                  {"blocks", list({dict({{"size", num(512)}, {"state", str("inactive")}, {"address", unum(a)},
                                                         {"frames", num(1)}})})}})},
                           {});
    EXPECT_EQ(errorOf(dumps(badFrames)), "f.pickle: segments[0]['blocks'][0]['frames']: expected a list of frame dicts "
                                         "{filename, name, line}, found a int");
}

// A process on cuda:1 writes an empty list for device 0: the one list that holds entries keeps
// them, in order, and both devices say they had a trace list.
TEST(SnapshotReader, OneFilledTraceListBesideEmptyOnes) {
    P root = snapshot({}, {{}, {entry("alloc", 0x1000, 512), entry("free_requested", 0x1000, 512),
                                entry("free_completed", 0x1000, 512)}});
    for (int proto : {2, 4}) {
        Snapshot s = read(root, proto);
        const DeviceData* d0 = s.device(0);
        const DeviceData* d1 = s.device(1);
        ASSERT_TRUE(d0 && d1) << proto;
        EXPECT_TRUE(d0->hasTraceList);
        EXPECT_EQ(d0->trace.rows(), 0u);
        EXPECT_TRUE(d1->hasTraceList);
        ASSERT_EQ(d1->trace.rows(), 3u);
        EXPECT_EQ(d1->trace.action[0], Action::Alloc);
        EXPECT_EQ(d1->trace.action[1], Action::FreeRequested);
        EXPECT_EQ(d1->trace.action[2], Action::FreeCompleted);
        EXPECT_EQ(d1->trace.addr[2], 0x1000u);
        EXPECT_EQ(d1->trace.size[1], 512u);
    }
}

// Trace entries written by Python's own pickle in every shape the whole-dict path reads or leaves
// to the stack (tests/tools/whole_dict_snapshot.py), with FRAME opcodes among them, then a
// training loop's, most of which the reader's templates read: read any of the three ways, each
// entry is what Python reads back.
TEST(SnapshotReader, EntriesReadWholeOrThroughTheStackAreWhatPythonReads) {
    const auto path = std::filesystem::temp_directory_path() / ("memlens-whole-" + std::to_string(::getpid()) + ".pickle");
    const auto made = oracle::runCommand(oracle::shellQuoted(MEMLENS_PYTHON) + " " +
                                         oracle::shellQuoted(MEMLENS_SOURCE_DIR "/tests/tools/whole_dict_snapshot.py") +
                                         " " + oracle::shellQuoted(path.string()));
    ASSERT_EQ(made.status, 0) << "whole_dict_snapshot.py did not run";
    const auto expected = nlohmann::json::parse(made.output);
    ASSERT_GT(expected.size(), 8000u);
    enum Way { Templates, Whole, Stack };
    for (Way way : {Templates, Whole, Stack}) {
        SCOPED_TRACE(way == Templates ? "read whole, by templates where they match" : way == Whole ? "read whole" : "through the stack");
        LoadOptions options;
        options.wholeDicts = way != Stack;
        options.dictTemplates = way == Templates;
        const Snapshot snap = readSnapshotFile(path.string(), options);
        // the training loop's 2,500 entries (tests/tools/whole_dict_snapshot.py) after its first
        // iteration are the bytes of an entry before, their numbers aside
        if (way == Templates) EXPECT_GT(snap.dictsReplayed, 1000u);
        else EXPECT_EQ(snap.dictsReplayed, 0u);
        const TraceColumns& t = snap.devices.at(0).trace;
        ASSERT_EQ(t.rows(), expected.size());
        for (size_t i = 0; i < t.rows(); ++i) {
            const auto& e = expected[i];
            SCOPED_TRACE(i);
            ASSERT_EQ(actionName(t.action[i]), e["action"].get<std::string>());
            ASSERT_EQ(t.addr[i], e["addr"].get<uint64_t>());
            ASSERT_EQ(t.size[i], e["size"].get<uint64_t>());
            ASSERT_EQ(t.timeUs[i], e["time_us"].get<int64_t>());
            ASSERT_EQ(stackText(snap, t.stack[i]), e["frames"].get<std::vector<std::string>>());
            ASSERT_EQ(snap.str(t.compileContext[i]), e["compile_context"].get<std::string>());
        }
    }
    std::filesystem::remove(path);
}

// Trace entries read by a template's plan (TraceRows::plan: the row of the first entry of those
// bytes, each number or shared frames list put into its field) are the entries written, as the
// item-by-item read gives them: numbers of every width in every field, frames lists shared (a memo
// get) or new, a field given twice (a shared frames list, then a new one: the second is the
// entry's), a key the reader does not know (counted in the notes). A number the reader refuses (a
// negative address, size or stream) in a dict of a template's bytes is refused with the
// item-by-item read's message; a negative time is taken, as it is item by item.
TEST(SnapshotReader, EntriesReadByPlanAreTheEntriesWritten) {
    P fa = frame("forward", "model.py", 10), fb = frame("backward", "model.py", 20), fc = frame("step", "train.py", 5);
    P shared = list({fa, fb});
    const std::vector<std::string> sharedText = {"forward@model.py:10", "backward@model.py:20"};
    // BININT1, BININT2 (each with its top bit set: unsigned), BININT, LONG1 (the sizes are num's)
    const uint64_t sizes[] = {200, 40000, 70000, uint64_t(1) << 33};
    // 3,600 entries: more than one HandoffQueue block of them (8,192 words, 6 to 8 words an
    // entry), so that the rows are appended on the queue's thread, and the negative number of the
    // last iteration is refused while that thread runs
    constexpr int kIterations = 300;
    constexpr size_t kPerIteration = 12;  // entries: 4 allocations, each requested and completed free
    struct Expected {
        std::string action;
        uint64_t addr, size, stream;
        int64_t time;
        std::vector<std::string> frames;
    };
    // negativeKey: the one field made negative, in the last iteration's alloc of k == 2, its
    // opcode the same as in the iterations before (so that its dict is one of a template's)
    auto build = [&](const std::string& negativeKey, std::vector<Expected>* expected) {
        std::vector<P> trace;
        for (int it = 0; it < kIterations; ++it) {
            for (int k = 0; k < 4; ++k) {
                const uint64_t addr = 0x7f0000000000 + 4096 * uint64_t(it * 4 + k);
                const uint64_t size = sizes[k] + uint64_t(it % 30);  // the opcodes of the iterations alike
                // k == 2: a stream of 4 bytes (BININT), as its negative is
                const uint64_t stream = k == 3 ? uint64_t(it % 30) : k == 2 ? 100000 : 0;
                const int64_t t = 1700000000000000 + 10 * (it * 4 + k);
                const bool own = k % 2 == 0;  // a new frames list (the same bytes every iteration)
                P frames = own ? list({fc, fa}) : shared;
                const std::vector<std::string> text =
                    own ? std::vector<std::string>{"step@train.py:5", "forward@model.py:10"} : sharedText;
                const bool last = it == kIterations - 1 && k == 2;
                // k == 2's numbers by num (BININT for size and stream) in every iteration: its
                // negatives then take the same opcodes (unum writes a LONG1 of 8 bytes)
                auto field = [&](const char* key, uint64_t v) {
                    if (k != 2 && std::string(key) != "size") return unum(v);
                    return last && negativeKey == key ? num(-int64_t(v)) : num(int64_t(v));
                };
                trace.push_back(dict({{"action", str("alloc")}, {"addr", field("addr", addr)}, {"size", field("size", size)},
                                      {"stream", field("stream", stream)},
                                      {"time_us", last && negativeKey == "time_us" ? num(-t) : num(t)},
                                      {"frames", frames}}));
                trace.push_back(dict({{"action", str("free_requested")}, {"frames", shared}, {"addr", unum(addr)},
                                      {"size", num(int64_t(size))}, {"stream", num(0)}, {"time_us", num(t + 1)},
                                      {"frames", list({fc, fb})}}));
                trace.push_back(dict({{"action", str("free_completed")}, {"addr", unum(addr)}, {"size", num(int64_t(size))},
                                      {"stream", num(0)}, {"time_us", num(t + 2)}, {"frames", frames},
                                      {"extra", num(it)}}));
                if (expected) {
                    expected->push_back({"alloc", addr, size, stream, t, text});
                    expected->push_back({"free_requested", addr, size, 0, t + 1, {"step@train.py:5", "backward@model.py:20"}});
                    expected->push_back({"free_completed", addr, size, 0, t + 2, text});
                }
            }
        }
        return dumps(snapshot({}, {trace}));
    };
    auto load = [](const std::string& bytes, bool templates) {
        LoadOptions options;
        options.dictTemplates = templates;
        return readSnapshotMemory(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()),
                                  options);
    };
    std::vector<Expected> expected;
    const std::string bytes = build("", &expected);
    for (bool templates : {true, false}) {
        SCOPED_TRACE(templates ? "by templates" : "item by item");
        const Snapshot s = load(bytes, templates);
        // all but the entries of three iterations (the templates learnt, then their successors,
        // and those learnt again where the writer's memo puts turn from BINPUT to LONG_BINPUT at
        // slot 256): a number misread as negative (a BININT1 or BININT2 with its top bit set
        // taken as signed) would send its dicts item by item, a quarter of them every iteration
        if (templates) EXPECT_GE(s.dictsReplayed, expected.size() - 3 * kPerIteration);
        else EXPECT_EQ(s.dictsReplayed, 0u);
        const TraceColumns& t = s.devices.at(0).trace;
        ASSERT_EQ(t.rows(), expected.size());
        for (size_t i = 0; i < t.rows(); ++i) {
            SCOPED_TRACE(i);
            const Expected& e = expected[i];
            ASSERT_EQ(actionName(t.action[i]), e.action);
            ASSERT_EQ(t.addr[i], e.addr);
            ASSERT_EQ(t.size[i], e.size);
            ASSERT_EQ(t.stream[i], e.stream);
            ASSERT_EQ(t.timeUs[i], e.time);
            ASSERT_EQ(t.flags[i], TraceColumns::HasAddr | TraceColumns::HasTime | TraceColumns::HasFrames);
            ASSERT_EQ(stackText(s, t.stack[i]), e.frames);
        }
        const std::string note = std::to_string(expected.size() / 3) + " trace entries carry 'extra'";
        EXPECT_TRUE(std::any_of(s.notes.begin(), s.notes.end(), [&](const std::string& n) { return n.find(note) == 0; }))
            << note;
    }
    // the last iteration's alloc of k == 2 (a plan's: no unknown key): entry 3 * (4 * (kIterations - 1) + 2)
    const size_t row = 3 * (4 * (kIterations - 1) + 2);
    for (const std::string key : {"addr", "size", "stream"}) {
        SCOPED_TRACE(key);
        const std::string negative = build(key, nullptr);
        const std::string place = "device_traces[0][" + std::to_string(row) + "]['" + key + "']";
        std::string messages[2];
        for (bool templates : {true, false}) {
            try {
                load(negative, templates);
                messages[templates] = "accepted";
            } catch (const ParseError& e) {
                messages[templates] = e.describe("f.pickle");
            }
        }
        EXPECT_EQ(messages[true], messages[false]);
        EXPECT_EQ(messages[true], "f.pickle: " + place + ": expected a non-negative int");
    }
    // a negative time is a time (parse()'s entryInt takes it), by plan as item by item: its dict
    // replayed as its positive one is
    const std::string negativeTime = build("time_us", nullptr);
    const uint64_t replayedPositive = load(bytes, true).dictsReplayed;
    for (bool templates : {true, false}) {
        SCOPED_TRACE(templates ? "negative time, by templates" : "negative time, item by item");
        const Snapshot s = load(negativeTime, templates);
        EXPECT_EQ(s.dictsReplayed, templates ? replayedPositive : 0u);
        const TraceColumns& t = s.devices.at(0).trace;
        ASSERT_EQ(t.rows(), expected.size());
        EXPECT_EQ(t.timeUs[row], -expected[row].time);
        EXPECT_EQ(t.timeUs[row + 3], expected[row + 3].time);
    }
}
