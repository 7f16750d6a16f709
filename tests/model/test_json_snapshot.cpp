// memory_viz's JSON form, read as a stream: the JSON is turned into pickle bytes on a second
// thread, a MiB at a time, while the reader parses them. A JSON of many MiB (several pieces and
// chunks) must read as the entries it holds (figures computed here from the same loop that wrote
// it); a JSON broken near its end must say so in the JSON's terms, after pieces of it were parsed;
// a cancel must stop the producer and the parser.
#include "memlens/model/ParseError.h"
#include "memlens/model/SnapshotReader.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <utility>

#include <unistd.h>

using namespace memlens::model;

namespace {

constexpr int kEntries = 60000;  // about 9 MB of JSON

std::string bigJson(int n) {
    std::string s = "{\"segments\": [], \"device_traces\": [[";
    for (int i = 0; i < n; ++i) {
        if (i) s += ", ";
        s += "{\"action\": \"alloc\", \"addr\": " + std::to_string(0x7f0000000000ull + 512ull * static_cast<unsigned>(i)) +
             ", \"size\": " + std::to_string(512 + i % 1000) + ", \"stream\": 0, \"time_us\": " + std::to_string(1000 + i) +
             ", \"frames\": [{\"filename\": \"train.py\", \"line\": " + std::to_string(i % 50) + ", \"name\": \"f" +
             std::to_string(i % 7) + "\"}]}";
    }
    s += "]]}";
    return s;
}

std::string tempFile(const std::string& name, const std::string& bytes) {
    const auto path = std::filesystem::temp_directory_path() / ("memlens-json-" + std::to_string(::getpid()) + "-" + name);
    std::ofstream(path, std::ios::binary) << bytes;
    return path.string();
}

} // namespace

TEST(JsonSnapshot, ManyMegabytesReadAsAStream) {
    const std::string json = bigJson(kEntries);
    ASSERT_GT(json.size(), 8u << 20);  // several of the producer's 1 MiB pieces and the reader's 2 MiB chunks
    const std::string path = tempFile("big.json", json);
    const Snapshot s = readSnapshotFile(path);
    std::filesystem::remove(path);
    ASSERT_EQ(s.devices.size(), 1u);
    const TraceColumns& t = s.devices[0].trace;
    ASSERT_EQ(t.rows(), static_cast<size_t>(kEntries));
    uint64_t bytes = 0, expected = 0;
    std::set<std::pair<uint64_t, int64_t>> seen;
    for (int i = 0; i < kEntries; ++i) {
        expected += static_cast<uint64_t>(512 + i % 1000);
        bytes += t.size[static_cast<size_t>(i)];
        EXPECT_EQ(t.addr[static_cast<size_t>(i)], 0x7f0000000000ull + 512ull * static_cast<unsigned>(i)) << i;
        EXPECT_EQ(t.timeUs[static_cast<size_t>(i)], 1000 + i) << i;
    }
    EXPECT_EQ(bytes, expected);
    // 50 lines x 7 names, paired as i % 50 and i % 7: lcm(50, 7) = 350 distinct frames and stacks
    // (and stack 0, the empty one)
    EXPECT_EQ(s.frames.size(), 350u);
    EXPECT_EQ(s.stackCount(), 351u);
    EXPECT_EQ(s.fileBytes, json.size());
}

TEST(JsonSnapshot, BrokenNearItsEndSaysSoInTheJsonsTerms) {
    std::string json = bigJson(kEntries);
    json.resize(json.size() - 40);  // inside the last entry: megabytes of pickle were made before
    const std::string path = tempFile("cut.json", json);
    try {
        (void)readSnapshotFile(path);
        FAIL() << "a cut JSON was read";
    } catch (const ParseError& e) {
        const std::string m = e.what();
        EXPECT_NE(m.find("JSON snapshot:"), std::string::npos) << m;
        EXPECT_EQ(m.find("ends early"), std::string::npos) << m;  // not the pickle's complaint
    }
    std::filesystem::remove(path);
}

TEST(JsonSnapshot, ACancelStopsTheProducerAndTheReader) {
    const std::string path = tempFile("cancel.json", bigJson(kEntries));
    std::atomic<bool> cancel{true};
    LoadOptions options;
    options.cancel = &cancel;
    EXPECT_THROW((void)readSnapshotFile(path, options), Cancelled);
    std::filesystem::remove(path);
}
