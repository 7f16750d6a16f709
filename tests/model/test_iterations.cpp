// Iteration markers in annotation names, and iterations of the bundled example (its generator
// writes "iteration N" ranges for iterations 0..29; the evaluations between them are not iterations).
#include "memlens/model/Iterations.h"
#include "memlens/model/SnapshotReader.h"

#include <gtest/gtest.h>

#include <filesystem>

using namespace memlens::model;

TEST(Iterations, NamesThatMarkIterations) {
    EXPECT_EQ(iterationNumber("ProfilerStep#12"), 12);
    EXPECT_EQ(iterationNumber("iteration 7"), 7);
    EXPECT_EQ(iterationNumber("## iteration 3 ##"), 3);
    EXPECT_EQ(iterationNumber("Iteration_42"), 42);
    EXPECT_EQ(iterationNumber("iter 5"), 5);
    EXPECT_EQ(iterationNumber("step:9"), 9);
    EXPECT_FALSE(iterationNumber("Optimizer.step#AdamW.step"));
    EXPECT_FALSE(iterationNumber("evaluate"));
    EXPECT_FALSE(iterationNumber("iteration"));
    EXPECT_FALSE(iterationNumber("step 3 of eval"));
    EXPECT_FALSE(iterationNumber("stepper 3"));
}

TEST(Iterations, TheExampleHasThirtyIterationsInTraceOrder) {
    std::filesystem::path p = std::filesystem::path(MEMLENS_SOURCE_DIR) / "resources" / "example.pickle";
    Snapshot snap = readSnapshotFile(p.string());
    auto its = detectIterations(snap, 0);
    ASSERT_EQ(its.size(), 30u);
    const auto& t = snap.device(0)->trace;
    for (size_t i = 0; i < its.size(); ++i) {
        EXPECT_EQ(its[i].number, static_cast<int64_t>(i));
        EXPECT_LE(its[i].firstEntry, its[i].lastEntry);
        if (i) {
            EXPECT_GT(its[i].firstEntry, its[i - 1].lastEntry);
        }
        // every entry inside lies within the annotation's times
        EXPECT_EQ(iterationOf(its, its[i].firstEntry), static_cast<int64_t>(i));
        EXPECT_EQ(iterationOf(its, its[i].lastEntry), static_cast<int64_t>(i));
    }
    EXPECT_LT(its.back().lastEntry, static_cast<int64_t>(t.rows()));
    EXPECT_EQ(iterationOf(its, -5), -1);
}
