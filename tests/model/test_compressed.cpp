// Compressed snapshots: gzip (one member and several), zstd (several frames) and xz files, named
// or not, read as a stream to the same snapshot as the uncompressed file; big enough to cross the
// reader's 2 MiB chunks; truncated and corrupt files end in one line naming the compressed file's
// byte. The compressed bytes are made here with zlib, libzstd and liblzma themselves.
#include "RealSnapshots.h"
#include "Synthetic.h"

#include "memlens/model/ParseError.h"
#include "memlens/model/SnapshotReader.h"
#include "memlens/model/SnapshotStats.h"

#include <gtest/gtest.h>

#include <lzma.h>
#include <zlib.h>
#include <zstd.h>

#include <filesystem>
#include <fstream>
#include <unistd.h>

using namespace memlens::model;

namespace {

std::string gzip(const std::string& raw) {
    z_stream z{};
    EXPECT_EQ(deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY), Z_OK);
    std::string out(deflateBound(&z, raw.size()) + 64, '\0');
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(raw.data()));
    z.avail_in = static_cast<uInt>(raw.size());
    z.next_out = reinterpret_cast<Bytef*>(out.data());
    z.avail_out = static_cast<uInt>(out.size());
    EXPECT_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);
    out.resize(z.total_out);
    deflateEnd(&z);
    return out;
}

std::string zstd(const std::string& raw) {
    std::string out(ZSTD_compressBound(raw.size()), '\0');
    const size_t n = ZSTD_compress(out.data(), out.size(), raw.data(), raw.size(), 3);
    EXPECT_FALSE(ZSTD_isError(n));
    out.resize(n);
    return out;
}

std::string xz(const std::string& raw) {
    std::string out(lzma_stream_buffer_bound(raw.size()), '\0');
    size_t pos = 0;
    EXPECT_EQ(lzma_easy_buffer_encode(1, LZMA_CHECK_CRC64, nullptr, reinterpret_cast<const uint8_t*>(raw.data()),
                                      raw.size(), reinterpret_cast<uint8_t*>(out.data()), &pos, out.size()),
              LZMA_OK);
    out.resize(pos);
    return out;
}

struct TempFile {
    std::filesystem::path path;
    TempFile(const std::string& name, const std::string& bytes)
        : path(std::filesystem::temp_directory_path() / ("memlens-compressed-" + std::to_string(::getpid()) + "-" + name)) {
        std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    }
    ~TempFile() { std::filesystem::remove(path); }
};

// A snapshot whose pickle is several MiB: many trace entries, each with its own frames.
std::string bigPickle() {
    using namespace synth;
    std::vector<P> trace;
    const uint64_t base = 0x7f0000000000;
    for (int i = 0; i < 24000; ++i) {
        P frames = list({frame("layer" + std::to_string(i % 97), "model_" + std::to_string(i % 13) + ".py", i % 500),
                         frame("train_step", "train.py", 40 + i % 7)});
        trace.push_back(entry("alloc", base + 4096 * static_cast<uint64_t>(i), 512, frames, i));
        trace.push_back(entry("free_requested", base + 4096 * static_cast<uint64_t>(i), 512, frames, i));
        trace.push_back(entry("free_completed", base + 4096 * static_cast<uint64_t>(i), 512, frames, i));
    }
    P seg = segment(0, base, {BlockSpec{base, 2u << 20, 0, "inactive", nullptr}});
    return dumps(snapshot({seg}, {trace}), 4);
}

std::string statsText(const Snapshot& s) {
    std::string out;
    for (const auto& d : computeStats(s)) {
        out += std::to_string(d.device) + ":" + std::to_string(d.segments) + "/" + std::to_string(d.blocks) + "/" +
               std::to_string(d.reservedBytes) + "/" + std::to_string(d.traceEvents);
        for (const auto& [a, n] : d.actions) out += " " + a + "=" + std::to_string(n);
        out += ";";
    }
    return out + " stacks=" + std::to_string(s.stackCount()) + " frames=" + std::to_string(s.frames.size());
}

std::string errorOf(const std::string& path) {
    try {
        readSnapshotFile(path);
    } catch (const ParseError& e) {
        return e.describe(path);
    }
    return "no error";
}

} // namespace

TEST(Compressed, EachFormatReadsAsTheUncompressedFile) {
    const std::string raw = bigPickle();
    ASSERT_GT(raw.size(), 5u << 20);  // several of the reader's 2 MiB chunks
    TempFile plain("plain.pickle", raw);
    const Snapshot expected = readSnapshotFile(plain.path.string());
    ASSERT_EQ(expected.device(0)->trace.rows(), 72000u);
    const std::string want = statsText(expected);
    struct Case {
        const char* name;
        std::string bytes;
    };
    const std::string gz = gzip(raw);
    const Case cases[] = {{"a.pickle.gz", gz},
                          {"no-extension", gz},                                  // recognised by content
                          {"members.gz", gzip(raw.substr(0, raw.size() / 3)) + gzip(raw.substr(raw.size() / 3))},
                          {"a.pickle.zst", zstd(raw)},
                          {"frames.zst", zstd(raw.substr(0, 1000)) + zstd(raw.substr(1000))},
                          {"a.pickle.xz", xz(raw)}};
    for (const Case& c : cases) {
        ASSERT_LT(c.bytes.size(), raw.size() / 3) << c.name;
        TempFile f(c.name, c.bytes);
        std::vector<double> progress;
        LoadOptions o;
        o.progress = [&](const char* phase, double x) {
            if (std::string(phase) == "reading") progress.push_back(x);
        };
        const Snapshot s = readSnapshotFile(f.path.string(), o);
        EXPECT_EQ(statsText(s), want) << c.name;
        EXPECT_EQ(s.fileBytes, raw.size()) << c.name;  // the pickle's own size
        ASSERT_FALSE(progress.empty()) << c.name;
        for (size_t i = 1; i < progress.size(); ++i) EXPECT_LE(progress[i - 1], progress[i]) << c.name;
        EXPECT_LE(progress.back(), 1.0) << c.name;
    }
}

TEST(Compressed, TruncatedAndCorruptFilesSayWhere) {
    const std::string raw = bigPickle();
    const std::string gz = gzip(raw), zs = zstd(raw), x = xz(raw);
    {
        TempFile f("cut.gz", gz.substr(0, gz.size() / 2));
        const std::string e = errorOf(f.path.string());
        EXPECT_NE(e.find("the gzip stream ends early (truncated?) at byte " + std::to_string(gz.size() / 2) +
                         " of the compressed file"),
                  std::string::npos)
            << e;
        EXPECT_EQ(e.find('\n'), std::string::npos);
    }
    {
        TempFile f("cut.zst", zs.substr(0, zs.size() - 100));
        const std::string e = errorOf(f.path.string());
        EXPECT_NE(e.find("the zstd stream ends early (truncated?)"), std::string::npos) << e;
    }
    {
        TempFile f("cut.xz", x.substr(0, x.size() / 3));
        const std::string e = errorOf(f.path.string());
        EXPECT_NE(e.find("the xz stream ends early (truncated?)"), std::string::npos) << e;
    }
    {
        std::string bad = gz;
        for (size_t i = 2000; i < 2100; ++i) bad[i] = static_cast<char>(bad[i] ^ 0x5a);
        TempFile f("bad.gz", bad);
        // deflate checks its data only at the member's end: the damage may reach the pickle reader first
        const std::string e = errorOf(f.path.string());
        EXPECT_TRUE(e.find("the gzip data is corrupt") != std::string::npos || e.find("pickle") != std::string::npos) << e;
        EXPECT_EQ(e.rfind(f.path.string() + ": ", 0), 0u) << e;
        EXPECT_EQ(e.find('\n'), std::string::npos) << e;
    }
    {
        std::string bad = x;
        for (size_t i = 3000; i < 3100; ++i) bad[i] = static_cast<char>(bad[i] ^ 0x5a);
        TempFile f("bad.xz", bad);
        EXPECT_NE(errorOf(f.path.string()).find("the xz data is corrupt"), std::string::npos);
    }
    {
        // the compressed data is fine but holds half a pickle: the reader says so, in the pickle's terms
        TempFile f("half.zst", zstd(raw.substr(0, raw.size() / 2)));
        const std::string e = errorOf(f.path.string());
        EXPECT_NE(e.find("the zstd data ends early (truncated?)"), std::string::npos) << e;
    }
}

TEST(Compressed, RealSnapshotsGzipped) {
    const auto files = realSnapshots();
    if (files.empty()) GTEST_SKIP() << "no real snapshots beside the checkout (" MEMLENS_SNAPSHOTS_DIR ")";
    for (const auto& p : files) {
        std::ifstream in(p, std::ios::binary);
        const std::string raw((std::istreambuf_iterator<char>(in)), {});
        TempFile f(p.filename().string() + ".gz", gzip(raw));
        EXPECT_EQ(statsText(readSnapshotFile(f.path.string())), statsText(readSnapshotFile(p.string()))) << p;
    }
}
