// memory_viz's JSON form, read as a stream: the JSON is turned into pickle bytes on a second
// thread, a MiB at a time, while the reader parses them. A JSON of many MiB (several pieces and
// chunks) must read as the entries it holds (figures computed here from the same loop that wrote
// it); a JSON broken near its end must say so in the JSON's terms, after pieces of it were parsed,
// and name the line and column of the fault (counted here in the text); escapes, numbers, NaN and
// encodings as Python's json module writes and reads them; a cancel must stop the producer and
// the parser.
#include "memlens/model/ParseError.h"
#include "memlens/model/SnapshotReader.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include <unistd.h>

using namespace memlens::model;

namespace {

constexpr int kEntries = 60000;  // about 9 MB of JSON

std::string bigJson(int n, const char* between = ", ") {
    std::string s = "{\"segments\": [], \"device_traces\": [[";
    for (int i = 0; i < n; ++i) {
        if (i) s += between;
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

// The ParseError that reading JSON (written to a file of its own) throws; none where it is read.
std::optional<ParseError> errorReading(const std::string& json, const std::string& name) {
    const std::string path = tempFile(name, json);
    std::optional<ParseError> error;
    try {
        (void)readSnapshotFile(path);
    } catch (const ParseError& e) {
        error = e;
    }
    std::filesystem::remove(path);
    return error;
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
    const auto e = errorReading(json, "cut.json");
    ASSERT_TRUE(e) << "a cut JSON was read";
    const std::string m = e->what();
    EXPECT_NE(m.find("JSON snapshot:"), std::string::npos) << m;
    EXPECT_EQ(m.find("ends early"), std::string::npos) << m;  // not the pickle's complaint
}

// The error's place, deep in a file of many lines: its byte, line and column as counted here.
TEST(JsonSnapshot, AnErrorNamesItsByteLineAndColumnAfterManyChunks) {
    std::string json = bigJson(kEntries, ",\n  ");
    // entry 50,000 of 60,000 loses the colon after "size": the parser stops at the value
    size_t at = 0;
    for (int i = 0; i < 50000; ++i) at = json.find("\"size\": ", at + 1);
    json.erase(at + 6, 1);  // "size" 512...
    const size_t fault = at + 7;  // its first digit
    ASSERT_TRUE(std::isdigit(static_cast<unsigned char>(json[fault])));
    ASSERT_GT(fault, 6u << 20);  // past several of the reader's 2 MiB chunks
    const size_t line = static_cast<size_t>(std::count(json.begin(), json.begin() + static_cast<std::ptrdiff_t>(fault), '\n')) + 1;
    const size_t column = fault - json.rfind('\n', fault);
    ASSERT_GT(line, 40000u);
    const auto e = errorReading(json, "lines.json");
    ASSERT_TRUE(e) << "a broken JSON was read";
    EXPECT_EQ(e->offset(), fault);
    EXPECT_NE(std::string(e->what()).find("JSON snapshot: parse error at line " + std::to_string(line) + ", column " +
                                          std::to_string(column) + ": missing a colon"),
              std::string::npos)
        << e->what();
}

// What Python's json.dump writes: \u escapes (ensure_ascii) for non-ASCII text, surrogate pairs
// beyond the BMP, escaped quotes and backslashes, NaN; integers beyond int64 as written.
TEST(JsonSnapshot, EscapesNumbersAndNanAsPythonsJsonWritesThem) {
    const std::string json =
        "{\"segments\": [], \"nan\": NaN, \"inf\": -Infinity, \"device_traces\": [[{\"action\": \"alloc\", "
        "\"addr\": 18446744073709551000, \"size\": 512, \"stream\": 0, \"time_us\": -5, \"frames\": "
        "[{\"filename\": \"caf\\u00e9\\ud83d\\ude00.py\", \"line\": 4294967296, \"name\": \"say \\\"hi\\\" \\\\ \\/\"}]}]]}";
    const std::string path = tempFile("escapes.json", json);
    const Snapshot s = readSnapshotFile(path);
    std::filesystem::remove(path);
    ASSERT_EQ(s.devices.size(), 1u);
    const TraceColumns& t = s.devices[0].trace;
    ASSERT_EQ(t.rows(), 1u);
    EXPECT_EQ(t.addr[0], 18446744073709551000ull);
    EXPECT_EQ(t.timeUs[0], -5);
    ASSERT_EQ(s.frames.size(), 1u);
    EXPECT_EQ(s.str(s.frames[0].filename), "caf\xc3\xa9\xf0\x9f\x98\x80.py");  // U+00E9, U+1F600 in UTF-8
    EXPECT_EQ(s.str(s.frames[0].name), "say \"hi\" \\ /");
    EXPECT_EQ(s.frames[0].line, 4294967296ull);
}

// Bytes that are not UTF-8 in a string are refused, as Python's json.load refuses them.
TEST(JsonSnapshot, BytesThatAreNotUtf8AreRefused) {
    const std::string json = "{\"segments\": [],\n \"name\": \"caf\xe9\"}";
    const size_t fault = json.find('\xe9');
    const size_t column = fault - json.rfind('\n', fault);  // on line 2
    const auto e = errorReading(json, "latin1.json");
    ASSERT_TRUE(e) << "a JSON with a Latin-1 byte was read";
    EXPECT_EQ(e->offset(), fault);
    EXPECT_NE(std::string(e->what()).find("JSON snapshot: parse error at line 2, column " + std::to_string(column) +
                                          ": invalid encoding in string"),
              std::string::npos)
        << e->what();
}

// RapidJSON takes a NUL byte for the end of its input: what follows one is still refused.
TEST(JsonSnapshot, ANulByteAfterTheDocumentIsRefused) {
    static const char kText[] = "{\"segments\": []}\n\0{\"segments\": []}";
    const std::string json(kText, sizeof kText - 1);
    const auto e = errorReading(json, "nul.json");
    ASSERT_TRUE(e) << "a JSON followed by a NUL byte and more was read";
    EXPECT_EQ(e->offset(), json.find('\0'));
    EXPECT_NE(std::string(e->what()).find("line 2, column 1: a NUL byte"), std::string::npos) << e->what();
}

TEST(JsonSnapshot, ACancelStopsTheProducerAndTheReader) {
    const std::string path = tempFile("cancel.json", bigJson(kEntries));
    std::atomic<bool> cancel{true};
    LoadOptions options;
    options.cancel = &cancel;
    EXPECT_THROW((void)readSnapshotFile(path, options), Cancelled);
    std::filesystem::remove(path);
}
