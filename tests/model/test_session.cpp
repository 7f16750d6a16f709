// Session files: SessionWriter and SessionFile. Round trip, schema version check, reading while
// the writer writes (WAL), following with poll(), a writer killed mid-way, damaged files.
#include "memlens/model/SessionFile.h"
#include "memlens/model/SessionWriter.h"

#include <gtest/gtest.h>

#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <random>

using namespace memlens::model;
namespace fs = std::filesystem;

namespace {

class TempDir {
public:
    TempDir() {
        std::string t = (fs::temp_directory_path() / "memlens-session-XXXXXX").string();
        if (!::mkdtemp(t.data())) throw std::runtime_error("mkdtemp");
        dir_ = t;
    }
    ~TempDir() {
        std::error_code ec;
        fs::remove_all(dir_, ec);
    }
    std::string file(const std::string& name) const { return (dir_ / name).string(); }

private:
    fs::path dir_;
};

std::string errorOf(const std::string& path) {
    try {
        SessionFile f(path);
    } catch (const SessionError& e) {
        return e.what();
    }
    return "opened";
}

std::string bytesOf(size_t n, unsigned seed) {
    std::string s(n, '\0');
    std::mt19937 g(seed);
    for (auto& c : s) c = static_cast<char>(g());
    return s;
}

SessionProcess someProcess() {
    SessionProcess p;
    p.pid = 4242;
    p.host = "node7";
    p.command = {"python", "train.py", "--lr", "1e-3", "quote\"and\\back\nslash", "ünï"};
    p.cwd = "/work";
    p.python = "3.11.2";
    p.torch = "2.11.0+cu130";
    p.cuda = "13.0";
    p.devicesJson = R"([{"index":0,"name":"NVIDIA H200","total_bytes":150000000000}])";
    p.allocatorSnapshots = true;
    p.startedUs = 1700000000000000;
    return p;
}

void writeFull(const std::string& path) {
    SessionWriter w(path, "test");
    w.setProcess(someProcess());
    for (int i = 1; i <= 12; ++i) w.addIteration({i, "train", 1000 * i, 1000 * i + 900});
    for (int i = 13; i <= 17; ++i) w.addIteration({i, "eval", 1000 * i, 1000 * i + 500});
    w.addSnapshot({0, 5, trigger::kIteration, 5900, 0, 0, "{}"}, bytesOf(1000, 1));
    w.addSamples({{100, 0, "nvml", 500, 1000, 2000, std::nullopt, std::nullopt},
                  {100, 1, "nvml", std::nullopt, 10, 2000, std::nullopt, std::nullopt}});
    w.addSamples({{200, 0, "torch", std::nullopt, std::nullopt, std::nullopt, 300, 200}});
    w.addMarker({150, 1, "lr_drop", R"({"lr":0.1})"});
    w.addGraphScan({0, 3, "train", 3900, true, R"({"graphs":[]})"});
    SessionProcess p = someProcess();
    p.endedUs = p.startedUs + 5;
    p.exitCode = 3;
    w.setProcess(p);
    w.finish(sessionNowUs());
}

} // namespace

TEST(SessionCrc, MatchesZlib) {
    EXPECT_EQ(crc32Update(0, "123456789", 9), 0xCBF43926u);
    EXPECT_EQ(crc32Update(0, "", 0), 0u);
    std::string big = bytesOf(100003, 7);
    uint32_t whole = crc32Update(0, big.data(), big.size());
    uint32_t parts = crc32Update(crc32Update(0, big.data(), 5001), big.data() + 5001, big.size() - 5001);
    EXPECT_EQ(whole, parts);
}

// A command line is bytes: what is not UTF-8 is stored as U+FFFD, the rest exactly.
TEST(Session, CommandLineBytesThatAreNotUtf8) {
    TempDir d;
    std::string path = d.file("bytes.memlens");
    {
        SessionWriter w(path, "test");
        SessionProcess p = someProcess();
        p.command = {"python", "caf\xe9.py", "\x01\x1f", ""};
        w.setProcess(p);
        w.finish(1);
    }
    SessionFile f(path);
    EXPECT_EQ(f.process().command, (std::vector<std::string>{"python", "caf\xef\xbf\xbd.py", "\x01\x1f", ""}));
}

TEST(Session, RoundTrip) {
    TempDir d;
    std::string path = d.file("run.memlens");
    writeFull(path);
    SessionFile f(path);
    EXPECT_EQ(f.process().pid, 4242);
    EXPECT_EQ(f.process().command, someProcess().command);
    EXPECT_EQ(f.process().torch, "2.11.0+cu130");
    EXPECT_EQ(f.process().exitCode, 3);
    EXPECT_FALSE(f.process().exitSignal);
    EXPECT_EQ(f.process().allocatorSnapshots, true);
    ASSERT_EQ(f.iterations().size(), 17u);
    EXPECT_EQ(f.iterations()[0].index, 1);
    EXPECT_EQ(f.iterations()[12].phase, "eval");
    EXPECT_EQ(f.iterations()[16].endUs, 17500);
    ASSERT_EQ(f.snapshots().size(), 1u);
    EXPECT_EQ(f.snapshots()[0].iteration, 5);
    EXPECT_EQ(f.snapshots()[0].trigger, "iteration");
    EXPECT_EQ(f.snapshots()[0].bytes, 1000u);
    EXPECT_EQ(f.readSnapshot(f.snapshots()[0].id), bytesOf(1000, 1));
    ASSERT_EQ(f.samples().size(), 3u);
    EXPECT_EQ(f.samples()[0].processUsed, 500);
    EXPECT_FALSE(f.samples()[1].processUsed);
    EXPECT_EQ(f.samples()[2].reserved, 300);
    ASSERT_EQ(f.markers().size(), 1u);
    EXPECT_EQ(f.markers()[0].name, "lr_drop");
    ASSERT_EQ(f.graphScans().size(), 1u);
    EXPECT_TRUE(f.graphScans()[0].partial);
    EXPECT_TRUE(f.finished());
    EXPECT_FALSE(f.live());
    EXPECT_EQ(f.check(), "");
    // Finished: the log was folded into the file, which is now a single file.
    EXPECT_FALSE(fs::exists(path + "-wal"));
}

TEST(Session, LargeSnapshotSpansChunks) {
    TempDir d;
    std::string path = d.file("big.memlens");
    std::string pickle = bytesOf(2 * SessionWriter::kChunkBytes + 12345, 3);
    {
        SessionWriter w(path, "test");
        auto r = w.addSnapshot({0, 1, trigger::kOutOfMemory, 1, 0, 0, "{}"}, pickle);
        EXPECT_EQ(r.bytes, pickle.size());
        EXPECT_EQ(r.crc32, crc32Update(0, pickle.data(), pickle.size()));
    }
    SessionFile f(path);
    ASSERT_EQ(f.snapshots().size(), 1u);
    EXPECT_TRUE(f.readSnapshot(f.snapshots()[0].id) == pickle);
    std::string out = d.file("out.pickle");
    f.writeSnapshotTo(f.snapshots()[0].id, out);
    std::ifstream in(out, std::ios::binary);
    std::string back((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_TRUE(back == pickle);
    EXPECT_THROW(f.readSnapshot(99), SessionError);
}

TEST(Session, SchemaVersionChecked) {
    TempDir d;
    std::string path = d.file("v.memlens");
    writeFull(path);
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db, "PRAGMA user_version = 2", nullptr, nullptr, nullptr), SQLITE_OK);
    sqlite3_close(db);
    EXPECT_EQ(errorOf(path), "session schema version 2 is not supported (this memlens reads version 1)");
}

TEST(Session, OtherSqliteFilesRefused) {
    TempDir d;
    std::string path = d.file("other.db");
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db, "CREATE TABLE t(x)", nullptr, nullptr, nullptr), SQLITE_OK);
    sqlite3_close(db);
    EXPECT_EQ(errorOf(path), "not a memlens session: an SQLite database without session tables");
    ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db, "PRAGMA application_id = 7", nullptr, nullptr, nullptr), SQLITE_OK);
    sqlite3_close(db);
    EXPECT_EQ(errorOf(path), "not a memlens session: SQLite application id 0x00000007");
}

TEST(Session, ReadableWhileWritingAndFollowedByPoll) {
    TempDir d;
    std::string path = d.file("live.memlens");
    SessionWriter w(path, "test");
    w.setProcess(someProcess());
    w.addIteration({1, "train", 10, 20});
    SessionFile f(path);  // the writer is still open: WAL mode lets us read
    EXPECT_TRUE(f.live());
    EXPECT_FALSE(f.finished());
    ASSERT_EQ(f.iterations().size(), 1u);
    EXPECT_FALSE(f.poll().any());  // nothing new
    w.addIteration({2, "train", 20, 30});
    w.addIteration({3, "eval", 30, 40});
    w.addSnapshot({0, 3, trigger::kRequest, 35, 0, 0, "{}"}, "pickle-bytes");
    w.addSamples({{40, 0, "nvml", 1, 2, 3, std::nullopt, std::nullopt}});
    auto u = f.poll();
    EXPECT_EQ(u.iterations, 2u);
    EXPECT_EQ(u.snapshots, 1u);
    EXPECT_EQ(u.samples, 1u);
    EXPECT_FALSE(u.finished);
    ASSERT_EQ(f.iterations().size(), 3u);
    EXPECT_EQ(f.iterations()[2].phase, "eval");
    EXPECT_EQ(f.readSnapshot(f.snapshots()[0].id), "pickle-bytes");
    SessionProcess p = someProcess();
    p.exitCode = 0;
    w.setProcess(p);
    w.finish(sessionNowUs());
    u = f.poll();
    EXPECT_TRUE(u.finished);
    EXPECT_TRUE(u.process);
    EXPECT_EQ(f.process().exitCode, 0);
    EXPECT_FALSE(f.live());
}

// poll() in two halves (the window fetches on a worker, applies on the GUI thread): fetch()
// changes nothing the accessors show; apply() takes the rows in, as poll() would have.
TEST(Session, FetchOffTheReadingThreadThenApply) {
    TempDir d;
    std::string path = d.file("halves.memlens");
    SessionWriter w(path, "test");
    w.setProcess(someProcess());
    w.addIteration({1, "train", 10, 20});
    SessionFile f(path);
    EXPECT_FALSE(f.fetch().changed);  // nothing new
    w.addIteration({2, "train", 20, 30});
    w.addSnapshot({0, 2, trigger::kRequest, 25, 0, 0, "{}"}, "pickle-bytes");
    w.addGraphScan({0, 2, "train", 26, false, "{}"});
    SessionFile::Rows rows = f.fetch();
    EXPECT_TRUE(rows.changed);
    EXPECT_EQ(rows.iterations.size(), 1u);
    // not applied yet: the file shows what it showed
    EXPECT_EQ(f.iterations().size(), 1u);
    EXPECT_TRUE(f.snapshots().empty());
    EXPECT_TRUE(f.graphScans().empty());
    auto u = f.apply(std::move(rows));
    EXPECT_EQ(u.iterations, 1u);
    EXPECT_EQ(u.snapshots, 1u);
    EXPECT_EQ(u.graphScans, 1u);
    ASSERT_EQ(f.iterations().size(), 2u);
    EXPECT_EQ(f.iterations()[1].index, 2);
    EXPECT_EQ(f.readSnapshot(f.snapshots()[0].id), "pickle-bytes");
    EXPECT_FALSE(f.poll().any());
    w.addIteration({3, "eval", 30, 40});
    w.finish(sessionNowUs());
    u = f.apply(f.fetch());
    EXPECT_EQ(u.iterations, 1u);
    EXPECT_TRUE(u.finished);
    // the same rows as a file opened now
    SessionFile fresh(path);
    ASSERT_EQ(fresh.iterations().size(), f.iterations().size());
    for (size_t i = 0; i < f.iterations().size(); ++i) EXPECT_EQ(fresh.iterations()[i].index, f.iterations()[i].index);
    EXPECT_EQ(fresh.snapshots().size(), f.snapshots().size());
    EXPECT_EQ(fresh.graphScans().size(), f.graphScans().size());
    EXPECT_EQ(fresh.finished(), f.finished());
}

TEST(Session, WriterKilledKeepsCommittedRecords) {
    TempDir d;
    std::string path = d.file("killed.memlens");
    int ready[2];
    ASSERT_EQ(::pipe(ready), 0);
    pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        ::close(ready[0]);
        SessionWriter w(path, "test");
        w.setProcess(someProcess());
        for (int i = 1; i <= 7; ++i) w.addIteration({i, "train", i, i + 1});
        char c = 'x';
        (void)!::write(ready[1], &c, 1);
        for (int i = 8;; ++i) w.addIteration({i, "train", i, i + 1});  // until killed
    }
    ::close(ready[1]);
    char c;
    ASSERT_EQ(::read(ready[0], &c, 1), 1);
    // The stimulus, not a wait for a result: the writer keeps adding iterations, so that the kill
    // lands in the middle of a write; what the test checks holds whenever the kill comes.
    ::usleep(20000);
    ::kill(child, SIGKILL);
    int status = 0;
    ::waitpid(child, &status, 0);
    ::close(ready[0]);
    ASSERT_TRUE(WIFSIGNALED(status));
    SessionFile f(path);
    EXPECT_GE(f.iterations().size(), 7u);
    for (size_t i = 0; i < f.iterations().size(); ++i) EXPECT_EQ(f.iterations()[i].index, int64_t(i + 1));
    EXPECT_FALSE(f.finished());
    EXPECT_FALSE(f.live());  // its writer is gone
}

TEST(Session, DamagedFilesGiveOneLineErrors) {
    TempDir d;
    std::string good = d.file("good.memlens");
    writeFull(good);
    auto copy = [&](const std::string& name) {
        std::string p = d.file(name);
        fs::copy_file(good, p);
        return p;
    };

    EXPECT_EQ(errorOf(d.file("missing.memlens")), "cannot open: No such file or directory");

    std::string empty = d.file("empty.memlens");
    std::ofstream(empty).close();
    EXPECT_EQ(errorOf(empty), "not a memlens session: the file is empty");

    // Header overwritten.
    std::string header = copy("header.memlens");
    {
        std::fstream io(header, std::ios::in | std::ios::out | std::ios::binary);
        io.write("this is not it!!", 16);
    }
    EXPECT_EQ(errorOf(header),
              "not a memlens session, or its header is damaged: the first bytes are not an SQLite database header");

    // Truncated to half.
    std::string half = copy("half.memlens");
    fs::resize_file(half, fs::file_size(half) / 2);
    std::string e = errorOf(half);
    EXPECT_EQ(e.rfind("damaged session: the file is truncated (", 0), 0u) << e;

    // Truncated inside the header page.
    std::string tiny = copy("tiny.memlens");
    fs::resize_file(tiny, 50);
    EXPECT_EQ(errorOf(tiny),
              "not a memlens session, or its header is damaged: the first bytes are not an SQLite database header");

    // Table pages overwritten with garbage (beyond the first page): a damaged table is named.
    std::string pages = copy("pages.memlens");
    {
        auto size = fs::file_size(pages);
        std::fstream io(pages, std::ios::in | std::ios::out | std::ios::binary);
        std::string junk = bytesOf(size - 65536, 11);
        io.seekp(65536);
        io.write(junk.data(), static_cast<std::streamsize>(junk.size()));
    }
    e = errorOf(pages);
    EXPECT_NE(e.find("damaged session: "), std::string::npos) << e;
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;

    // Snapshot bytes altered: the session opens, the snapshot is refused by its checksum.
    std::string blob = copy("blob.memlens");
    {
        std::string pickle = bytesOf(1000, 1);
        std::ifstream in(blob, std::ios::binary);
        std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        auto at = all.find(pickle.substr(100, 64));
        ASSERT_NE(at, std::string::npos);
        std::fstream io(blob, std::ios::in | std::ios::out | std::ios::binary);
        io.seekp(static_cast<std::streamoff>(at));
        io.write("XXXXXXXX", 8);
    }
    SessionFile f(blob);
    try {
        f.readSnapshot(f.snapshots()[0].id);
        ADD_FAILURE() << "damaged snapshot accepted";
    } catch (const SessionError& err) {
        EXPECT_EQ(std::string(err.what()), "damaged session: snapshot 1 fails its checksum");
    }
    EXPECT_EQ(f.check(), "damaged session: snapshot 1 fails its checksum");
}
