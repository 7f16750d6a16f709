#include "JsonSnapshot.h"

#include "PickleEmitter.h"

#include "memlens/model/ParseError.h"

#include <rapidjson/error/en.h>
#include <rapidjson/reader.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <string>
#include <vector>

namespace memlens::model {

namespace {

// JSON SAX events (RapidJSON's reader) as pickle opcodes: an object is EMPTY_DICT MARK ...
// SETITEMS, an array EMPTY_LIST MARK ... APPENDS; keys and short strings are memoised as torch's
// pickler shares them.
class PickleSax {
public:
    bool Null() {
        item();
        e.none();
        return more();
    }
    bool Bool(bool v) {
        item();
        e.boolean(v);
        return more();
    }
    bool Int(int v) { return Int64(v); }
    bool Uint(unsigned v) { return Uint64(v); }
    bool Int64(int64_t v) {
        item();
        e.integer(v);
        return more();
    }
    bool Uint64(uint64_t v) {
        item();
        e.unsignedInteger(v);
        return more();
    }
    bool Double(double v) {  // also an integer too large for 64 bits (Python's json would keep it exact)
        item();
        e.real(v);
        return more();
    }
    bool RawNumber(const char*, rapidjson::SizeType, bool) { return false; }  // not asked for
    bool String(const char* s, rapidjson::SizeType n, bool) {
        item();
        e.str(std::string_view(s, n), n <= 64);
        return more();
    }
    bool StartObject() {
        item();
        e.beginDict();
        open_.push_back(false);
        return true;
    }
    bool Key(const char* s, rapidjson::SizeType n, bool) {
        item();
        e.str(std::string_view(s, n), true);
        return true;
    }
    bool EndObject(rapidjson::SizeType) {
        if (open_.back()) e.setItems();
        open_.pop_back();
        return more();
    }
    bool StartArray() {
        item();
        e.beginList();
        open_.push_back(false);
        return true;
    }
    bool EndArray(rapidjson::SizeType) {
        if (open_.back()) e.appends();
        open_.pop_back();
        return more();
    }

    PickleEmitter e;
    const ByteReader::Sink* sink = nullptr;
    bool stopped = false;  // the sink refused: the reader is gone

private:
    // Hands the pickle written so far to the sink once it holds about 1 MiB; false (which ends
    // the parse) when the sink refuses it.
    bool more() {
        if (e.pending() < (1u << 20)) return true;
        if (e.flush(*sink)) return true;
        stopped = true;
        return false;
    }
    // An item of the innermost container begins: its MARK goes before the first one only, so that
    // an empty container is EMPTY_LIST / EMPTY_DICT alone, as Python writes it.
    void item() {
        if (!open_.empty() && !open_.back()) {
            e.mark();
            open_.back() = true;
        }
    }
    std::vector<bool> open_;  // per open container: whether its MARK is out
};

// The reader's bytes as a RapidJSON input stream, a buffered chunk at a time (nothing is read
// twice, nothing copied). '\0' is the end, as RapidJSON expects of a stream. Counts the lines of
// each chunk it leaves, so that an error can name its line and column.
class ReaderStream {
public:
    using Ch = char;
    ReaderStream(ByteReader& in, const LoadOptions& options) : in_(in), options_(options) {
        p_ = in_.cursor();
        end_ = p_ + in_.buffered();
    }
    Ch Peek() { return available() ? static_cast<Ch>(*p_) : '\0'; }
    Ch Take() { return available() ? static_cast<Ch>(*p_++) : '\0'; }
    size_t Tell() const { return static_cast<size_t>(in_.offset() + static_cast<uint64_t>(p_ - in_.cursor())); }
    // output: not a stream RapidJSON writes to
    Ch* PutBegin() { return nullptr; }
    void Put(Ch) {}
    void Flush() {}
    size_t PutEnd(Ch*) { return 0; }

    // Whether the data ended where RapidJSON saw its end ('\0'): not a NUL byte in the data.
    bool exhausted() { return !available(); }
    // The line (from 1) and column (from 1) of the byte at `offset`, which is in the current chunk.
    std::pair<uint64_t, uint64_t> lineAndColumn(uint64_t offset) {
        const uint8_t* at = in_.cursor() + std::min<uint64_t>(offset - in_.offset(), static_cast<uint64_t>(end_ - in_.cursor()));
        countLines(in_.cursor(), at);
        return {lines_ + 1, offset - lineStart_ + 1};
    }

private:
    // A byte to read at p_: the current chunk's, else the next chunk's; false at the end of the data.
    bool available() {
        if (p_ != end_) [[likely]]
            return true;
        return !ended_ && next();
    }
    // The current chunk is read: the next one, or false at the end of the data.
    bool next() {
        countLines(in_.cursor(), end_);
        in_.skip(static_cast<size_t>(end_ - in_.cursor()));
        // a new chunk: a moment to report progress and to notice a cancel
        if (options_.cancel && options_.cancel->load(std::memory_order_relaxed)) throw Cancelled();
        if (options_.progress && in_.progressTotal())
            options_.progress("reading", std::min(1.0, static_cast<double>(in_.progressPosition()) /
                                                           static_cast<double>(in_.progressTotal())));
        const auto more = in_.peek(1);
        p_ = in_.cursor();
        end_ = p_ + in_.buffered();
        ended_ = more.empty();
        return !ended_;
    }
    void countLines(const uint8_t* from, const uint8_t* to) {
        for (const uint8_t* q = from; q < to; ++q) {
            q = static_cast<const uint8_t*>(std::memchr(q, '\n', static_cast<size_t>(to - q)));
            if (!q) break;
            ++lines_;
            lineStart_ = in_.offset() + static_cast<uint64_t>(q + 1 - in_.cursor());
        }
    }

    ByteReader& in_;
    const LoadOptions& options_;
    const uint8_t* p_ = nullptr;
    const uint8_t* end_ = nullptr;
    uint64_t lines_ = 0;      // newlines before in_.cursor()
    uint64_t lineStart_ = 0;  // the offset after the last of them
    bool ended_ = false;      // the data ended: not asked for again
};

std::string sentence(const char* s) {  // RapidJSON's "Missing a name for object member." as a clause
    std::string out(s);
    if (!out.empty() && out.back() == '.') out.pop_back();
    if (!out.empty()) out[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(out[0])));
    return out;
}

} // namespace

void jsonSnapshotToPickle(ByteReader& in, const LoadOptions& options, const ByteReader::Sink& sink) {
    PickleSax sax;
    sax.sink = &sink;
    ReaderStream stream(in, options);
    rapidjson::Reader reader;
    // iterative: no recursion however deep the nesting; numbers exact as Python's json reads
    // them; NaN and Infinity, which Python's json.dump writes; strings checked to be UTF-8
    constexpr unsigned kFlags = rapidjson::kParseIterativeFlag | rapidjson::kParseFullPrecisionFlag |
                                rapidjson::kParseNanAndInfFlag | rapidjson::kParseValidateEncodingFlag;
    const rapidjson::ParseResult ok = reader.Parse<kFlags>(stream, sax);
    if (sax.stopped) return;
    const auto fail = [&stream](uint64_t at, const std::string& what) {
        const auto [line, column] = stream.lineAndColumn(at);
        throw ParseError(at, "JSON snapshot: parse error at line " + std::to_string(line) + ", column " +
                                 std::to_string(column) + ": " + what);
    };
    if (!ok) fail(ok.Offset(), sentence(rapidjson::GetParseError_En(ok.Code())));
    if (!stream.exhausted()) fail(stream.Tell(), "a NUL byte where the document should end");
    const std::string tail = sax.e.finish();
    if (!tail.empty()) sink(reinterpret_cast<const uint8_t*>(tail.data()), tail.size());
}

} // namespace memlens::model
