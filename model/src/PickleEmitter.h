#pragma once
// Internal to the snapshot writer (SnapshotSlice): writes a pickle the way torch's C++ pickler
// does, opcode by opcode (PROTO 2..4 header, EMPTY_DICT / MARK / SETITEMS, EMPTY_LIST / APPENDS,
// BINUNICODE, BININT*, LONG1, NEWTRUE / NEWFALSE, BINFLOAT, TUPLE2, BINPUT / BINGET). Python's
// pickle and PyTorch's memory_viz read it.
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>

namespace memlens::model {

class PickleEmitter {
public:
    explicit PickleEmitter(int protocol = 4);

    void none() { out_ += 'N'; }
    void boolean(bool b) { out_ += b ? '\x88' : '\x89'; }
    void integer(int64_t v);
    void unsignedInteger(uint64_t v);
    void real(double v);
    // A string; with `share`, written once and fetched from the memo afterwards (keys, names).
    void str(std::string_view s, bool share = true);
    void beginDict() { out_ += '}'; }
    void beginList() { out_ += ']'; }
    // Between a mark and setItems / appends: the pairs, or the items, of the dict or list below.
    void mark() { out_ += '('; }
    void setItems() { out_ += 'u'; }
    void appends() { out_ += 'e'; }
    void tuple2() { out_ += '\x86'; }
    // Memoises the object on top of the stack under a new id, which get() pushes again.
    uint32_t put();
    void get(uint32_t id);
    std::string finish();  // STOP; the bytes
    // The bytes written so far, handed to f(data, size) and dropped (a stream written in pieces);
    // what f returns. The memo stays: later gets may name what was handed over.
    template <typename F>
    bool flush(F&& f) {
        const bool ok = out_.empty() || f(reinterpret_cast<const uint8_t*>(out_.data()), out_.size());
        out_.clear();
        return ok;
    }
    size_t pending() const { return out_.size(); }

private:
    std::string out_;
    uint32_t next_ = 0;
    // looked up by a string_view without making a string of it
    struct Hash {
        using is_transparent = void;
        size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
    };
    std::unordered_map<std::string, uint32_t, Hash, std::equal_to<>> strings_;
    // The shared strings met lately, by a cheap hash of their length and first and last 8 bytes
    // (a JSON repeats the same keys and names over and over): a hit costs no full hash and no
    // walk of the map; a miss or a collision falls back to the map.
    struct Recent {
        const std::string* key = nullptr;  // the map's own (its nodes do not move)
        uint32_t id = 0;
    };
    static constexpr int kRecentBits = 12;
    std::array<Recent, size_t(1) << kRecentBits> recent_{};
};

} // namespace memlens::model
