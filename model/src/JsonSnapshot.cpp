#include "JsonSnapshot.h"

#include "PickleEmitter.h"

#include "memlens/model/ParseError.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <iterator>
#include <vector>

namespace memlens::model {

namespace {

// JSON SAX events as pickle opcodes: an object is EMPTY_DICT MARK ... SETITEMS, an array
// EMPTY_LIST MARK ... APPENDS; keys and short strings are memoised as torch's pickler shares them.
class PickleSax {
public:
    using number_integer_t = nlohmann::json::number_integer_t;
    using number_unsigned_t = nlohmann::json::number_unsigned_t;
    using number_float_t = nlohmann::json::number_float_t;
    using string_t = nlohmann::json::string_t;
    using binary_t = nlohmann::json::binary_t;

    bool null() {
        item();
        e.none();
        return more();
    }
    bool boolean(bool v) {
        item();
        e.boolean(v);
        return more();
    }
    bool number_integer(number_integer_t v) {
        item();
        e.integer(v);
        return more();
    }
    bool number_unsigned(number_unsigned_t v) {
        item();
        e.unsignedInteger(v);
        return more();
    }
    bool number_float(number_float_t v, const string_t&) {
        item();
        e.real(v);
        return more();
    }
    bool string(string_t& s) {
        item();
        e.str(s, s.size() <= 64);
        return more();
    }
    bool binary(binary_t&) {
        error = "binary values are not JSON a snapshot has";
        return false;
    }
    bool start_object(std::size_t) {
        item();
        e.beginDict();
        open_.push_back(false);
        return true;
    }
    bool key(string_t& s) {
        item();
        e.str(s, true);
        return true;
    }
    bool end_object() {
        if (open_.back()) e.setItems();
        open_.pop_back();
        return more();
    }
    bool start_array(std::size_t) {
        item();
        e.beginList();
        open_.push_back(false);
        return true;
    }
    bool end_array() {
        if (open_.back()) e.appends();
        open_.pop_back();
        return more();
    }
    bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& ex) {
        error = ex.what();
        errorAt = position;
        return false;
    }

    PickleEmitter e;
    std::string error;
    std::size_t errorAt = 0;
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

// The reader's bytes as an input iterator for the JSON parser (nothing is read twice).
class ReaderIterator {
public:
    using iterator_category = std::input_iterator_tag;
    using value_type = char;
    using difference_type = std::ptrdiff_t;
    using pointer = const char*;
    using reference = const char&;

    ReaderIterator() = default;
    ReaderIterator(ByteReader* in, const LoadOptions* options) : in_(in), options_(options) { fill(); }
    reference operator*() const { return c_; }
    ReaderIterator& operator++() {
        fill();
        return *this;
    }
    bool operator==(const ReaderIterator& o) const { return atEnd() == o.atEnd(); }
    bool operator!=(const ReaderIterator& o) const { return !(*this == o); }

private:
    bool atEnd() const { return in_ == nullptr || end_; }
    void fill() {
        if (in_->buffered() > 0) {
            c_ = static_cast<char>(*in_->cursor());
            in_->skip(1);
            return;
        }
        // a new chunk: a moment to report progress and to notice a cancel
        if (options_) {
            if (options_->cancel && options_->cancel->load(std::memory_order_relaxed)) throw Cancelled();
            if (options_->progress && in_->progressTotal())
                options_->progress("reading", std::min(1.0, static_cast<double>(in_->progressPosition()) /
                                                                static_cast<double>(in_->progressTotal())));
        }
        uint8_t b;
        if (in_->readSome(&b, 1) == 1) c_ = static_cast<char>(b);
        else end_ = true;
    }
    ByteReader* in_ = nullptr;
    const LoadOptions* options_ = nullptr;
    char c_ = 0;
    bool end_ = false;
};

} // namespace

void jsonSnapshotToPickle(ByteReader& in, const LoadOptions& options, const ByteReader::Sink& sink) {
    PickleSax sax;
    sax.sink = &sink;
    const bool ok = nlohmann::json::sax_parse(ReaderIterator(&in, &options), ReaderIterator(), &sax);
    if (sax.stopped) return;
    if (!ok || !sax.error.empty()) {
        std::string what = sax.error.empty() ? std::string("not valid JSON") : sax.error;
        if (auto p = what.find("] "); what.rfind("[json.exception", 0) == 0 && p != std::string::npos)
            what = what.substr(p + 2);  // without nlohmann's exception id
        throw ParseError(sax.errorAt ? sax.errorAt - 1 : ParseError::kNoOffset, "JSON snapshot: " + what);
    }
    const std::string tail = sax.e.finish();
    if (!tail.empty()) sink(reinterpret_cast<const uint8_t*>(tail.data()), tail.size());
}

} // namespace memlens::model
