// The doctor on plain snapshots: training loops written as traces with mistakes planted at sizes
// chosen here (tests/support/JobTrace.h), the bundled example (its generator plants a kept graph
// of 3 x 8 MiB per iteration and dies of fragmentation), and the real snapshots (no error, stable).
#include "JobTrace.h"
#include "RealSnapshots.h"

#include "memlens/model/AllocatorState.h"
#include "memlens/model/IterationDiff.h"
#include "memlens/model/MemoryCategory.h"
#include "memlens/model/SessionDoctor.h"
#include "memlens/model/SessionWriter.h"
#include "memlens/model/FindingFix.h"
#include "memlens/model/SnapshotDoctor.h"
#include "memlens/model/SnapshotReader.h"
#include "memlens/model/StackDiff.h"

#include <gtest/gtest.h>

#include <filesystem>

#include <unistd.h>

using namespace memlens::model;
using jobtrace::Job;
using jobtrace::KiB;
using jobtrace::MiB;

namespace {

Snapshot snapshotOf(const Job& job) { return synth::read(jobtrace::pickle(job)); }

const Finding* findRule(const DoctorReport& r, const std::string& rule) {
    for (const Finding& f : r.findings)
        if (f.rule == rule) return &f;
    return nullptr;
}

std::string rulesOf(const DoctorReport& r) {
    std::string out;
    for (const Finding& f : r.findings) out += f.rule + "(" + severityName(f.severity) + ") ";
    return out;
}

void expectNear(double value, double analytic, const char* what) {
    EXPECT_NEAR(value, analytic, 0.1 * analytic) << what;
}

} // namespace

TEST(Doctor, IterationsFromThePatternMatchTheLoop) {
    Job job;
    job.annotate = false;
    job.iterations = 7;
    const Snapshot s = snapshotOf(job);
    const IterationSplit split = splitIterations(s, 0);
    EXPECT_EQ(split.source, IterationSource::Pattern);
    ASSERT_EQ(split.iterations.size(), 7u);
    EXPECT_FALSE(split.lastIncomplete);
    // each iteration opens with its input batch: train.py:35, 2 MiB
    const TraceColumns& t = s.device(0)->trace;
    for (const Iteration& it : split.iterations) {
        EXPECT_EQ(t.action[it.firstEntry], Action::Alloc);
        EXPECT_EQ(t.size[it.firstEntry], job.batch);
    }
}

// A snapshot dumped after one step of a many-layer model: the layers' stacks recur once per
// layer, evenly, but they are layers, not steps. With six steps the same code splits into six.
TEST(Doctor, OneStepOfManyLayersIsNotManyIterations) {
    Job job;
    job.annotate = false;
    job.sameLayerCode = true;
    job.layers = 24;
    job.iterations = 1;
    const IterationSplit one = splitIterations(snapshotOf(job), 0);
    EXPECT_TRUE(one.iterations.size() <= 1) << one.iterations.size() << " iterations: " << one.note;
    job.iterations = 6;
    const IterationSplit six = splitIterations(snapshotOf(job), 0);
    EXPECT_EQ(six.source, IterationSource::Pattern);
    EXPECT_EQ(six.iterations.size(), 6u) << six.note;
}

// torch's own Optimizer.step#… ranges: an iteration ends with its step; what follows the last
// step is an unfinished one (a snapshot dumped after one step of a 24-layer model is one step).
TEST(Doctor, OptimizerStepAnnotationsEndIterations) {
    Job job;
    job.annotate = false;
    job.stepAnnotations = true;
    job.iterations = 5;
    const Snapshot s = snapshotOf(job);
    const IterationSplit split = splitIterations(s, 0);
    EXPECT_EQ(split.source, IterationSource::Annotations);
    ASSERT_EQ(split.iterations.size(), 5u) << split.note;
    EXPECT_FALSE(split.lastIncomplete);
    const TraceColumns& t = s.device(0)->trace;
    for (size_t k = 1; k < split.iterations.size(); ++k) {  // each after the first allocates its batch first
        int64_t i = split.iterations[k].firstEntry;
        while (t.action[i] != Action::Alloc) ++i;
        EXPECT_EQ(t.size[i], job.batch) << k;
    }
    job.cutLast = true;
    const IterationSplit cut = splitIterations(snapshotOf(job), 0);
    EXPECT_EQ(cut.iterations.size(), 6u);
    EXPECT_TRUE(cut.lastIncomplete);
    Job one;
    one.annotate = false;
    one.stepAnnotations = true;
    one.sameLayerCode = true;
    one.layers = 24;
    one.iterations = 1;
    EXPECT_EQ(splitIterations(snapshotOf(one), 0).iterations.size(), 1u);
}

TEST(Doctor, ATraceCutInsideAnIterationSaysSo) {
    for (bool annotate : {true, false}) {
        Job job;
        job.annotate = annotate;
        job.cutLast = true;
        const IterationSplit split = splitIterations(snapshotOf(job), 0);
        EXPECT_EQ(split.iterations.size(), static_cast<size_t>(job.iterations + 1)) << annotate;
        EXPECT_TRUE(split.lastIncomplete) << annotate;
        EXPECT_EQ(split.complete(), static_cast<size_t>(job.iterations)) << annotate;
    }
}

TEST(Doctor, ACorrectLoopHasNoFindingAtWarning) {
    for (bool annotate : {true, false}) {
        Job job;
        job.annotate = annotate;
        job.cutLast = true;  // the cut iteration's activations are work in progress, not growth
        const DoctorReport r = diagnoseSnapshot(snapshotOf(job));
        for (const Finding& f : r.findings) EXPECT_LT(f.severity, Severity::Warning) << rulesOf(r);
        EXPECT_NE(r.summary.batchSize.find("steady"), std::string::npos) << r.summary.batchSize;
    }
}

TEST(Doctor, AGraphKeptEveryIterationIsGraphKept) {
    for (bool annotate : {true, false}) {
        Job job;
        job.annotate = annotate;
        job.iterations = 10;
        job.graphKept = {3 * MiB, 5 * MiB};
        const DoctorReport r = diagnoseSnapshot(snapshotOf(job));
        const Finding* f = findRule(r, "graph-kept");
        ASSERT_TRUE(f) << rulesOf(r);
        EXPECT_EQ(f->severity, Severity::Error);
        ASSERT_TRUE(f->perIterationBytes);
        expectNear(*f->perIterationBytes, 8.0 * MiB, "bytes per iteration");
        EXPECT_EQ(f->bytes, 10 * 8 * MiB);
        EXPECT_EQ(f->count, 20u);
        EXPECT_EQ(f->sinceIteration, 1);
        EXPECT_NE(f->title.find("train.py:81"), std::string::npos) << f->title;
        EXPECT_EQ(f->allocEntries.size(), 20u);
        EXPECT_NE(r.summary.batchSize.find("It is not the batch size"), std::string::npos) << r.summary.batchSize;
        EXPECT_EQ(findRule(r, "growth"), nullptr) << rulesOf(r);
    }
}

// Inputs of varying length (batches of 64, 8, 48 and 8 MiB in turn) in a trace that starts with
// the first iteration's batch, as a trace whose ring buffer overflowed, or a job without
// parameters, does: the live bytes at the start of that iteration are those before the trace's
// first entry (none here), not after it (its 64 MiB batch). Everything is freed within each
// iteration, so each iteration starts from nothing and peaks at its batch, the 4 x 4 MiB
// activations and the 512-byte loss.
TEST(Doctor, InputsOfVaryingLengthFromTheTracesFirstEntryAreVariableLength) {
    for (bool annotate : {true, false}) {
        Job job;
        job.annotate = annotate;
        job.parameters = 0;
        job.iterations = 8;
        job.batches = {64 * MiB, 8 * MiB, 48 * MiB, 8 * MiB};
        const Snapshot snap = snapshotOf(job);
        ASSERT_EQ(snap.devices.at(0).trace.size[0], 64 * MiB) << "the trace starts with the first batch";
        const DoctorReport r = diagnoseSnapshot(snap);
        const Finding* f = findRule(r, rule::kVariableLength);
        ASSERT_TRUE(f) << rulesOf(r);
        // peaks: 80 MiB twice, 64 MiB twice, 24 MiB four times (each plus the loss's 512 bytes);
        // the median (the 5th smallest of 8) is 64 MiB: the largest input sets 16 MiB more
        EXPECT_EQ(f->bytes, 16 * MiB);
        EXPECT_NE(f->title.find("from 24 MiB to 80 MiB"), std::string::npos) << f->title;
        EXPECT_NE(f->evidence.find("within 0 B"), std::string::npos) << f->evidence;
    }
}

// The summary's figures from the loop's own sizes: the forward pass peaks with the parameters,
// the batch, every layer's activation, this iteration's kept output and the loss (plus, after
// the first step, the optimizer's state and the outputs kept before); one output is kept a step.
// 150 layers make an iteration about 1,000 entries long, so that its peak lies well inside it.
TEST(Doctor, TheSummarysPeaksAndGrowthAreTheLoopsOwnSizes) {
    for (bool annotate : {true, false}) {
        Job job;
        job.annotate = annotate;
        job.layers = 150;
        job.keptLogits = 1 * MiB;
        const DoctorReport r = diagnoseSnapshot(snapshotOf(job));
        ASSERT_EQ(r.iterations.complete(), static_cast<size_t>(job.iterations)) << annotate;
        const uint64_t params = job.parameters * job.parameter;
        const uint64_t forward = job.batch + job.layers * job.activation + job.keptLogits + 512;
        const uint64_t state = 2 * job.parameters * job.parameter;
        ASSERT_TRUE(r.summary.firstIterationPeak) << annotate;
        EXPECT_EQ(*r.summary.firstIterationPeak, params + forward) << annotate;
        ASSERT_TRUE(r.summary.endPeak) << annotate;
        EXPECT_EQ(*r.summary.endPeak, params + state + (job.iterations - 1) * job.keptLogits + forward) << annotate;
        ASSERT_TRUE(r.summary.growthPerIteration) << annotate;
        EXPECT_DOUBLE_EQ(*r.summary.growthPerIteration, static_cast<double>(job.keptLogits)) << annotate;
        // the same from the final state the window's document keeps
        const Snapshot s = snapshotOf(job);
        const DeviceState final = finalDeviceState(s, 0);
        DoctorOptions options;
        options.finalState = &final;
        const DoctorReport again = diagnoseSnapshot(s, options);
        EXPECT_EQ(again.summary.firstIterationPeak, r.summary.firstIterationPeak) << annotate;
        EXPECT_EQ(again.summary.endPeak, r.summary.endPeak) << annotate;
        EXPECT_EQ(again.summary.liveBytes, r.summary.liveBytes) << annotate;
        EXPECT_EQ(again.summary.batchSize, r.summary.batchSize) << annotate;
        EXPECT_EQ(rulesOf(again), rulesOf(r)) << annotate;
    }
}

TEST(Doctor, OneForwardTensorKeptPerIterationIsKeptOnDevice) {
    Job job;
    job.keptLogits = 768 * KiB;
    const DoctorReport r = diagnoseSnapshot(snapshotOf(job));
    const Finding* f = findRule(r, "kept-on-device");
    ASSERT_TRUE(f) << rulesOf(r);
    expectNear(*f->perIterationBytes, 768.0 * KiB, "bytes per iteration");
    EXPECT_EQ(f->count, static_cast<uint64_t>(job.iterations));
    ASSERT_FALSE(f->frames.empty());
    EXPECT_EQ(f->frames.front().name, "linear");
}

// The fixed twin of capture/examples/mistakes/growth.py on CUDA: a cache bounded to the last two
// steps' outputs, plus the current step's still in scope, holds three iterations' tensors at
// every iteration's end. That window slides; nothing grows.
TEST(Doctor, ABoundedWindowOfKeptOutputsIsNoGrowth) {
    for (int window : {2, 3}) {
        Job job;
        job.iterations = 15;
        job.keptLogits = 768 * KiB;
        job.keptLogitsWindow = window;
        const DoctorReport r = diagnoseSnapshot(snapshotOf(job));
        for (const Finding& f : r.findings) EXPECT_LT(f.severity, Severity::Warning) << "window " << window << ": " << rulesOf(r);
    }
    // the same outputs never freed, over as many iterations: kept on the device
    Job job;
    job.iterations = 15;
    job.keptLogits = 768 * KiB;
    const DoctorReport kept = diagnoseSnapshot(snapshotOf(job));
    const Finding* f = findRule(kept, "kept-on-device");
    ASSERT_TRUE(f) << rulesOf(kept);
    EXPECT_EQ(f->count, 15u);
}

TEST(Doctor, ACacheGrowingOutsideTheModelIsGrowth) {
    Job job;
    job.cacheGrowth = 1 * MiB;
    const DoctorReport r = diagnoseSnapshot(snapshotOf(job));
    const Finding* f = findRule(r, "growth");
    ASSERT_TRUE(f) << rulesOf(r);
    expectNear(*f->perIterationBytes, 1.0 * MiB, "bytes per iteration");
    ASSERT_FALSE(f->frames.empty());
    EXPECT_EQ(f->frames.front().filename, "/home/me/train.py");
    EXPECT_EQ(f->frames.front().line, 60u);
}

TEST(Doctor, GradientsZeroedInPlaceAreGradsKept) {
    Job job;
    job.gradsKept = true;
    const DoctorReport r = diagnoseSnapshot(snapshotOf(job));
    const Finding* f = findRule(r, "grads-kept");
    ASSERT_TRUE(f) << rulesOf(r);
    EXPECT_EQ(f->bytes, static_cast<uint64_t>(job.parameters) * job.parameter);
    EXPECT_EQ(f->count, static_cast<uint64_t>(job.parameters));
    EXPECT_EQ(f->severity, Severity::Warning);
    // not growth: they were allocated once
    EXPECT_EQ(findRule(r, "growth"), nullptr) << rulesOf(r);
}

TEST(Doctor, TheIterationDiffGroupsSurvivorsByStack) {
    Job job;
    job.graphKept = {3 * MiB, 5 * MiB};
    const Snapshot s = snapshotOf(job);
    const IterationSplit split = splitIterations(s, 0);
    const TraceColumns& t = s.device(0)->trace;
    // iterations 2..4 (indices 1..3), alive at the end of iteration 4
    const Survivors sv = survivorsOf(t, split.iterations, 1, 3, split.iterations[3].lastEntry);
    EXPECT_EQ(sv.bytes, 3 * 8 * MiB);
    ASSERT_EQ(sv.groups.size(), 2u);
    EXPECT_EQ(sv.groups[0].bytes, 3 * 5 * MiB);
    EXPECT_EQ(sv.groups[0].count, 3u);
    EXPECT_EQ(sv.groups[0].firstIteration, 2);
    EXPECT_EQ(sv.groups[0].iterationsWith, 3u);
    EXPECT_DOUBLE_EQ(sv.groups[0].bytesPerIteration(), 5.0 * MiB);
    // one iteration alone, alive at its own end: its leak, nothing of the loop
    const Survivors one = survivorsOf(t, split.iterations, 5, 5, split.iterations[5].lastEntry);
    EXPECT_EQ(one.bytes, 8 * MiB);
}

TEST(Doctor, TwoFilesDifferByTheStacksThatGrew) {
    Job a, b;
    a.graphKept = b.graphKept = {3 * MiB, 5 * MiB};
    a.iterations = 4;
    b.iterations = 9;
    const Snapshot sa = snapshotOf(a), sb = snapshotOf(b);
    const StateHistory ha(sa, 0), hb(sb, 0);
    const auto d = diffLiveByStack(sa, ha.stateAfter(ha.entries() - 1), sb, hb.stateAfter(hb.entries() - 1));
    ASSERT_GE(d.size(), 2u);
    EXPECT_EQ(d[0].change, StackDelta::Change::Grew);
    EXPECT_EQ(d[0].delta(), static_cast<int64_t>(5 * 5 * MiB));
    EXPECT_EQ(d[1].delta(), static_cast<int64_t>(5 * 3 * MiB));
    for (size_t i = 2; i < d.size(); ++i) EXPECT_EQ(d[i].delta(), 0) << i;
}

TEST(Doctor, TheExampleKeepsGraphsAndDiesOfFragmentation) {
    // resources/make_example.py: `losses.append(loss + 0.01 * aux_entropy(h))` keeps 3 x 8 MiB
    // (plus a scalar) per iteration; the last evaluation's 256 MiB log_softmax fails.
    const auto path = std::filesystem::path(MEMLENS_SOURCE_DIR) / "resources" / "example.pickle";
    const DoctorReport r = diagnoseSnapshot(readSnapshotFile(path.string()));
    const Finding* g = findRule(r, "graph-kept");
    ASSERT_TRUE(g) << rulesOf(r);
    expectNear(*g->perIterationBytes, 24.0 * MiB, "kept per iteration");
    EXPECT_NE(g->title.find("train.py:81"), std::string::npos) << g->title;
    const Finding* f = findRule(r, "fragmentation");
    ASSERT_TRUE(f) << rulesOf(r);
    EXPECT_EQ(f->bytes, 256 * MiB);
    EXPECT_EQ(f->severity, Severity::Error);
    EXPECT_TRUE(r.summary.oom);
    EXPECT_EQ(r.iterations.iterations.size(), 30u);
}

TEST(Doctor, RealSnapshotsAreDiagnosedTheSameTwice) {
    const auto files = realSnapshots();
    if (files.empty()) GTEST_SKIP() << "no real snapshots in " << MEMLENS_SNAPSHOTS_DIR;
    for (const auto& file : files) {
        const Snapshot s = readSnapshotFile(file.string());
        const DoctorReport a = diagnoseSnapshot(s), b = diagnoseSnapshot(s);
        ASSERT_EQ(a.findings.size(), b.findings.size()) << file;
        for (size_t i = 0; i < a.findings.size(); ++i) {
            EXPECT_EQ(a.findings[i].rule, b.findings[i].rule) << file;
            EXPECT_EQ(a.findings[i].bytes, b.findings[i].bytes) << file;
        }
        EXPECT_FALSE(a.summary.nvidiaSmi.empty()) << file;
    }
}

// The doctor with the caller's state history (the window's) and without one (the command line:
// the snapshot's own final state, one rewind to the states before the ooms, none where there is
// no oom) says the same: every finding's rule, title, bytes, evidence and fix, and the summary.
TEST(Doctor, AHistoryGivenOrNotGivesTheSameReport) {
    std::vector<std::filesystem::path> files = realSnapshots();
    files.push_back(std::filesystem::path(MEMLENS_SOURCE_DIR) / "resources" / "example.pickle");  // ooms
    size_t ooms = 0;
    for (const auto& file : files) {
        SCOPED_TRACE(file.string());
        const Snapshot s = readSnapshotFile(file.string());
        const int device = doctorDevice(s);
        if (device < 0) continue;
        const StateHistory history(s, device);
        DoctorOptions given;
        given.history = &history;
        const DoctorReport a = diagnoseSnapshot(s, given), b = diagnoseSnapshot(s);
        ASSERT_EQ(a.findings.size(), b.findings.size());
        for (size_t i = 0; i < a.findings.size(); ++i) {
            EXPECT_EQ(a.findings[i].rule, b.findings[i].rule);
            EXPECT_EQ(a.findings[i].title, b.findings[i].title);
            EXPECT_EQ(a.findings[i].bytes, b.findings[i].bytes);
            EXPECT_EQ(a.findings[i].evidence, b.findings[i].evidence);
            EXPECT_EQ(a.findings[i].fix, b.findings[i].fix);
            EXPECT_EQ(a.findings[i].oomEntry, b.findings[i].oomEntry);
        }
        EXPECT_EQ(a.summary.oom, b.summary.oom);
        EXPECT_EQ(a.summary.endPeak, b.summary.endPeak);
        EXPECT_EQ(a.summary.reservedBytes, b.summary.reservedBytes);
        EXPECT_EQ(a.summary.liveBytes, b.summary.liveBytes);
        EXPECT_EQ(a.summary.nvidiaSmi, b.summary.nvidiaSmi);
        EXPECT_EQ(a.summary.batchSize, b.summary.batchSize);
        ooms += a.summary.oom;
    }
    EXPECT_GT(ooms, 0u) << "no snapshot with an oom was diagnosed";
}

TEST(Doctor, ATightLoopOfOneAllocationIsNoIteration) {
    // one iteration: the parameters made one after another (one stack, three times) and the
    // gradients (another, three times) repeat, but nothing else allocates between them
    Job job;
    job.iterations = 1;
    job.annotate = false;
    EXPECT_TRUE(iterationsFromPattern(snapshotOf(job), 0).iterations.empty());
    job.iterations = 2;
    EXPECT_EQ(iterationsFromPattern(snapshotOf(job), 0).iterations.size(), 2u);
}

TEST(Doctor, TheAgentsTagsMakeCategoriesExact) {
    // JobTrace allocates upwards from kBase without reuse: the 3 parameters (1 MiB each), then
    // iteration 1's batch (2 MiB), 4 activations (4 MiB each), the loss (512 B), 3 gradients
    // (1 MiB each), and the optimizer's 6 state tensors (1 MiB each) from kBase + 24 MiB + 512.
    // The agent tags the parameters, and (to be told apart from the estimate) the first state
    // tensor as a gradient.
    Job job;
    const Snapshot s = snapshotOf(job);
    const StateHistory h(s, 0);
    const DeviceState st = h.stateAfter(h.entries() - 1);
    const uint64_t base = jobtrace::kBase, state = base + 24 * MiB + 512;
    auto pair = [](uint64_t a) { return "[" + std::to_string(a) + ", 1048576]"; };
    const std::string info = "{\"categories\": {\"parameter\": [" + pair(base) + ", " + pair(base + MiB) + ", " + pair(base + 2 * MiB) +
                             "], \"gradient\": [" + pair(state) + "]}}";
    const CategoryTags tags = categoryTags(info);
    ASSERT_EQ(tags.size(), 4u);
    const CategoryBytes estimated = categoriesAt(st, stackRoles(s));
    EXPECT_EQ(estimated[MemoryCategory::Parameter], 3 * MiB);
    EXPECT_EQ(estimated[MemoryCategory::OptimizerState], 6 * MiB);
    EXPECT_EQ(estimated[MemoryCategory::Gradient], 0u);
    EXPECT_TRUE(estimated.estimated);
    const CategoryBytes exact = categoriesAt(st, stackRoles(s), tags);
    EXPECT_EQ(exact[MemoryCategory::Parameter], 3 * MiB);
    EXPECT_EQ(exact[MemoryCategory::Gradient], 1 * MiB);
    EXPECT_EQ(exact[MemoryCategory::OptimizerState], 5 * MiB);
    EXPECT_TRUE(exact.estimated);  // five state tensors were not tagged
    EXPECT_TRUE(categoryTags("not json").empty());
    EXPECT_TRUE(categoryTags("{}").empty());
}

TEST(Doctor, TwoSnapshotsOfASessionAreDiffedByStack) {
    // a session with a snapshot at iteration 4 and one at iteration 9 of the leaking loop (its
    // kept graph: 3 + 5 MiB per iteration): between them 5 more of each
    const std::string path = (std::filesystem::temp_directory_path() / ("memlens-doctor-" + std::to_string(::getpid()) + ".memlens")).string();
    std::filesystem::remove(path);
    Job a, b;
    a.graphKept = b.graphKept = {3 * MiB, 5 * MiB};
    a.iterations = 4;
    b.iterations = 9;
    {
        SessionWriter w(path, "test_doctor");
        for (int i = 1; i <= 9; ++i) w.addIteration({i, "train", 1000 * i, 1000 * i + 900});
        w.addSnapshot({0, 4, trigger::kIteration, 4950, 0, 0, "{}"}, jobtrace::pickle(a));
        w.addSnapshot({0, 9, trigger::kIteration, 9950, 0, 0, "{}"}, jobtrace::pickle(b));
        w.finish(sessionNowUs());
    }
    const SessionFile f(path);
    const auto ids = snapshotsOfIterations(f, 4, 9);
    ASSERT_TRUE(ids);
    EXPECT_FALSE(snapshotsOfIterations(f, 3, 9));
    auto read = [&](int64_t id) {
        const std::string bytes = f.readSnapshot(id);
        return readSnapshotMemory(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()));
    };
    const Snapshot sa = read(ids->first), sb = read(ids->second);
    const StateHistory ha(sa, 0), hb(sb, 0);
    const auto d = diffLiveByStack(sa, ha.stateAfter(ha.entries() - 1), sb, hb.stateAfter(hb.entries() - 1));
    ASSERT_GE(d.size(), 2u);
    EXPECT_EQ(d[0].delta(), static_cast<int64_t>(5 * 5 * MiB));
    EXPECT_EQ(d[1].delta(), static_cast<int64_t>(5 * 3 * MiB));
    std::filesystem::remove(path);
}

// The advice takes the allocator's settings into account: an out-of-memory in pieces with
// expandable segments already on does not say "try expandable_segments", and its fix cannot be
// replayed as that setting.
TEST(Doctor, FragmentationWithExpandableSegmentsOnSaysSo) {
    using namespace synth;
    const uint64_t base = 0x7f0000000000ull;
    for (const bool expandable : {false, true}) {
        // 64 MiB: three 16 MiB tensors live, two 8 MiB holes; 12 MiB asked: 16 MiB free, no piece fits
        const std::vector<BlockSpec> blocks = {{base, 16 * MiB, 16 * MiB, "active_allocated", nullptr},
                                               {base + 16 * MiB, 8 * MiB, 0, "inactive", nullptr},
                                               {base + 24 * MiB, 16 * MiB, 16 * MiB, "active_allocated", nullptr},
                                               {base + 40 * MiB, 8 * MiB, 0, "inactive", nullptr},
                                               {base + 48 * MiB, 16 * MiB, 16 * MiB, "active_allocated", nullptr}};
        std::vector<P> trace = {entry("alloc", base, 16 * MiB, nullptr, 10),
                                entry("alloc", base + 16 * MiB, 8 * MiB, nullptr, 20),
                                entry("alloc", base + 24 * MiB, 16 * MiB, nullptr, 30),
                                entry("alloc", base + 40 * MiB, 8 * MiB, nullptr, 40),
                                entry("alloc", base + 48 * MiB, 16 * MiB, nullptr, 50),
                                entry("free_requested", base + 16 * MiB, 8 * MiB, nullptr, 60),
                                entry("free_completed", base + 16 * MiB, 8 * MiB, nullptr, 61),
                                entry("free_requested", base + 40 * MiB, 8 * MiB, nullptr, 70),
                                entry("free_completed", base + 40 * MiB, 8 * MiB, nullptr, 71),
                                dict({{"action", str("oom")}, {"addr", unum(0)}, {"size", unum(12 * MiB)},
                                      {"stream", num(0)}, {"device_free", unum(0)}, {"time_us", num(80)},
                                      {"frames", list()}})};
        const Snapshot s = synth::read(dumps(snapshot({segment(0, base, blocks, expandable)}, {trace}), 4));
        const DoctorReport r = diagnoseSnapshot(s);
        const Finding* f = findRule(r, "fragmentation");
        ASSERT_TRUE(f) << expandable << ": " << rulesOf(r);
        EXPECT_EQ(f->bytes, 12 * MiB);
        EXPECT_EQ(f->expandableAlready, expandable);
        EXPECT_EQ(f->fix.find("expandable_segments:True") == std::string::npos, expandable) << f->fix;
        EXPECT_EQ(fixOf(*f).possible, !expandable) << fixOf(*f).why;
    }
}
