#include "memlens/model/SnapshotReader.h"

#include "FrameRunCache.h"
#include "memlens/model/ByteReader.h"
#include "memlens/model/ParseError.h"
#include "memlens/model/PickleDocument.h"
#include "memlens/model/PickleMachine.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <cstdio>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>

namespace memlens::model {

namespace {

// Key strings, interned once so that dict keys compare as integers.
struct Keys {
    StringId filename, name, line, action, addr, size, stream, time_us, frames, device_free, compile_context,
        user_metadata, segments, device_traces, device, address, total_size, allocated_size, active_size,
        requested_size, segment_type, segment_pool_id, is_expandable, blocks, state, history, real_size,
        allocator_settings, external_annotations, stage, large;
    explicit Keys(StringTable& s)
        : filename(s.intern("filename")), name(s.intern("name")), line(s.intern("line")), action(s.intern("action")),
          addr(s.intern("addr")), size(s.intern("size")), stream(s.intern("stream")), time_us(s.intern("time_us")),
          frames(s.intern("frames")), device_free(s.intern("device_free")),
          compile_context(s.intern("compile_context")), user_metadata(s.intern("user_metadata")),
          segments(s.intern("segments")), device_traces(s.intern("device_traces")), device(s.intern("device")),
          address(s.intern("address")), total_size(s.intern("total_size")), allocated_size(s.intern("allocated_size")),
          active_size(s.intern("active_size")), requested_size(s.intern("requested_size")),
          segment_type(s.intern("segment_type")), segment_pool_id(s.intern("segment_pool_id")),
          is_expandable(s.intern("is_expandable")), blocks(s.intern("blocks")), state(s.intern("state")),
          history(s.intern("history")), real_size(s.intern("real_size")),
          allocator_settings(s.intern("allocator_settings")), external_annotations(s.intern("external_annotations")),
          stage(s.intern("stage")), large(s.intern("large")) {}
};

struct FrameKey {
    StringId file, name;
    uint64_t line;
    bool known;
    bool operator==(const FrameKey&) const = default;
};
struct FrameKeyHash {
    size_t operator()(const FrameKey& k) const {
        uint64_t h = k.file * 0x9E3779B97F4A7C15ull ^ (k.name + 0x632BE59BD9B4E019ull) * 0xBF58476D1CE4E5B9ull;
        h ^= (k.line + k.known) * 0x94D049BB133111EBull;
        return static_cast<size_t>(h ^ (h >> 31));
    }
};

// Every frames list of the trace is hashed, so this runs over millions of ids: two frame ids
// per multiplication, in two independent chains that the processor runs side by side.
uint64_t hashFrames(const FrameId* ids, size_t n) {
    constexpr uint64_t kMul = 0x9E3779B97F4A7C15ull;
    uint64_t a = n, b = 0x632BE59BD9B4E019ull;
    size_t k = 0;
    for (; k + 4 <= n; k += 4) {
        uint64_t x, y;
        std::memcpy(&x, ids + k, 8);
        std::memcpy(&y, ids + k + 2, 8);
        a = (a ^ x) * kMul;
        a ^= a >> 32;
        b = (b ^ y) * kMul;
        b ^= b >> 32;
    }
    for (; k < n; ++k) a = (a ^ ids[k]) * kMul;
    uint64_t h = (a ^ (b >> 1)) * kMul;
    return h ^ (h >> 29);
}

// Takes the page faults of memory about to be written on a second thread: the trace columns are
// reserved up front, and each of their pages would otherwise fault on the parsing thread when
// first written. Populating a page does not change what it holds, so a range freed meanwhile
// (a column that outgrew its reservation) is harmless.
class Prefaulter {
public:
    Prefaulter() : thread_([this] { loop(); }) {}
    ~Prefaulter() {
        {
            std::lock_guard lock(m_);
            stop_ = true;
        }
        cv_.notify_all();
        thread_.join();
    }
    void request(const void* begin, size_t bytes) {
        {
            std::lock_guard lock(m_);
            ranges_.emplace_back(reinterpret_cast<uintptr_t>(begin), bytes);
        }
        cv_.notify_one();
    }

private:
    void loop() {
        const uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
        for (;;) {
            std::pair<uintptr_t, size_t> r;
            {
                std::unique_lock lock(m_);
                cv_.wait(lock, [&] { return stop_ || !ranges_.empty(); });
                if (stop_) return;
                r = ranges_.front();
                ranges_.pop_front();
            }
            uintptr_t first = r.first & ~(page - 1);
#ifdef MADV_POPULATE_WRITE
            ::madvise(reinterpret_cast<void*>(first), r.first + r.second - first, MADV_POPULATE_WRITE);
#endif
        }
    }

    std::mutex m_;
    std::condition_variable cv_;
    std::deque<std::pair<uintptr_t, size_t>> ranges_;
    bool stop_ = false;
    std::thread thread_;  // last: starts once the members above exist
};

enum class EntryKey : uint8_t { Other, Action, Addr, Size, Stream, DeviceFree, TimeUs, Frames, CompileContext, UserMetadata };

// Builds the Snapshot while the pickle is read: frames, stacks and trace entries are turned
// into compact rows as soon as they are complete, so the generic tree stays small.
class Builder final : public PickleHooks {
public:
    Builder(PickleDocument& doc, uint64_t fileBytes) : doc_(doc), k_(doc.strings) {
        std::pair<StringId, EntryKey> keys[] = {
            {k_.action, EntryKey::Action},       {k_.addr, EntryKey::Addr},
            {k_.size, EntryKey::Size},           {k_.stream, EntryKey::Stream},
            {k_.device_free, EntryKey::DeviceFree}, {k_.time_us, EntryKey::TimeUs},
            {k_.frames, EntryKey::Frames},       {k_.compile_context, EntryKey::CompileContext},
            {k_.user_metadata, EntryKey::UserMetadata}};
        for (auto [id, which] : keys) {
            if (id >= entryKeys_.size()) entryKeys_.resize(id + 1, EntryKey::Other);
            entryKeys_[id] = which;
        }
        rows_.reserve(static_cast<size_t>(std::min<uint64_t>(fileBytes / 48 + 64, uint64_t(1) << 28)));
        doc.reserve(static_cast<size_t>(std::min<uint64_t>(fileBytes / 24 + 64, uint64_t(1) << 28)),
                    static_cast<size_t>(std::min<uint64_t>(fileBytes / sizeof(Value) + 64, uint64_t(1) << 28)));
    }

    Value collapse(PickleDocument& doc, Value v) override {
        if (v.tag == Tag::Dict) {
            const auto& nd = doc.node(v.ref);
            if (nd.count >= 2 && nd.count <= 64) {
                tmpItems_.clear();
                doc.forEach(v.ref, [&](const Value& x) { tmpItems_.push_back(x); });
                Value out;
                if (absorb(tmpItems_.data(), tmpItems_.size(), out)) return out;
            }
        } else if (v.tag == Tag::List) {
            const auto& nd = doc.node(v.ref);
            if (nd.count > 0) {
                bool allFrames = true;
                doc.forEach(v.ref, [&](const Value& x) { allFrames = allFrames && x.tag == Tag::Frame; });
                if (allFrames) {
                    StackId s = internStack(v.ref);
                    doc.release(v.ref);
                    return Value::node(Tag::Stack, s);
                }
            }
        }
        return v;
    }

    // A dict filled by one SETITEMS: frames and trace entries become rows without being stored.
    bool absorbDict(PickleDocument&, const Value* items, size_t n, Value& out) override {
        return n >= 4 && n <= 64 && absorb(items, n, out);
    }

    bool absorbList(PickleDocument&, const Value* items, size_t n, Value& out) override {
        for (size_t i = 0; i < n; ++i)
            if (items[i].tag != Tag::Frame) return false;
        tmpFrames_.resize(n);
        for (size_t i = 0; i < n; ++i) tmpFrames_[i] = items[i].ref;
        out = Value::node(Tag::Stack, internFrames(tmpFrames_.data(), n));
        return true;
    }

    // A frames list read whole from its bytes (the machine's memo gets of frames).
    bool absorbMemoRun(PickleDocument&, const MemoGetRun& run, Value& out) override {
        return frameRuns_.absorb(run, out, [this](const FrameId* ids, size_t n) {
            return Value::node(Tag::Stack, internFrames(ids, n));
        });
    }
    void memoRewritten(uint64_t, Value old) override {
        if (old.tag == Tag::Frame) frameRuns_.clear();  // known runs may name other frames now
    }

    void expandList(PickleDocument&, Value collapsed, std::vector<Value>& items) override {
        StackId s = collapsed.ref;
        for (const FrameId* f = snap.stackBegin(s); f != snap.stackBegin(s) + snap.stackSize(s); ++f)
            items.push_back(Value::node(Tag::Frame, *f));
    }

    bool absorb(const Value* items, size_t n, Value& out) {
        if (n == 6 || n == 8) {  // a frame has 3 keys, 4 with an fx field
            if (auto f = frameFromItems(items, n)) {
                out = Value::node(Tag::Frame, *f);
                return true;
            }
        }
        if (auto r = rowFromItems(items, n, nullptr)) {
            out = Value::node(Tag::Row, *r);
            return true;
        }
        return false;
    }

    Snapshot finish(Value root, int protocol, uint64_t fileBytes, const LoadOptions& options);

    Snapshot snap;

private:
    // --- collapsing
    std::optional<FrameId> frameFromItems(const Value* items, size_t n) {
        FrameKey key{0, 0, 0, false};
        bool haveFile = false, haveName = false, ok = true;
        for (size_t i = 0; i + 1 < n && ok; i += 2) {
            const Value& kv = items[i];
            const Value& v = items[i + 1];
            if (kv.tag != Tag::Str) {
                ok = false;
                break;
            }
            if (kv.ref == k_.filename && v.tag == Tag::Str) {
                key.file = v.ref;
                haveFile = true;
            } else if (kv.ref == k_.name && v.tag == Tag::Str) {
                key.name = v.ref;
                haveName = true;
            } else if (kv.ref == k_.line && (v.tag == Tag::Int || v.tag == Tag::UInt)) {
                key.line = v.bits;
                key.known = !(v.tag == Tag::UInt && v.bits == ~uint64_t(0)) && !(v.tag == Tag::Int && v.asInt() < 0);
            } else if (kv.ref == k_.line || kv.ref == k_.filename || kv.ref == k_.name) {
                ok = false;
            }  // fx_* and other extra keys are ignored
        }
        if (!ok || !haveFile || !haveName) return std::nullopt;
        auto [it, inserted] = frameIndex_.try_emplace(key, static_cast<FrameId>(snap.frames.size()));
        if (inserted) snap.frames.push_back(Frame{key.file, key.name, key.line, key.known});
        return it->second;
    }

    StackId internStack(uint32_t listNode) {
        tmpFrames_.clear();
        doc_.forEach(listNode, [&](const Value& x) { tmpFrames_.push_back(x.ref); });
        return internFrames(tmpFrames_.data(), tmpFrames_.size());
    }
    StackId internFrames(const FrameId* ids, size_t n) {
        uint64_t h = hashFrames(ids, n);
        if (stackSlots_.empty() || stackCount_ * 2 >= stackSlots_.size()) growStackTable();
        size_t mask = stackSlots_.size() - 1;
        for (size_t i = h & mask;; i = (i + 1) & mask) {
            StackId s = stackSlots_[i];
            if (s == 0) {
                s = static_cast<StackId>(snap.stackOffsets.size() - 1);
                snap.stackFrames.insert(snap.stackFrames.end(), ids, ids + n);
                snap.stackOffsets.push_back(static_cast<uint32_t>(snap.stackFrames.size()));
                stackSlots_[i] = s;
                stackHashes_.push_back(h);
                ++stackCount_;
                return s;
            }
            if (stackHashes_[s] == h && snap.stackSize(s) == n && std::equal(ids, ids + n, snap.stackBegin(s)))
                return s;
        }
    }

    Action actionOf(StringId name) {
        if (name >= actionCache_.size()) actionCache_.resize(name + 1, -1);
        if (actionCache_[name] < 0) actionCache_[name] = static_cast<int8_t>(actionFromName(doc_.strings.view(name)));
        return static_cast<Action>(actionCache_[name]);
    }

    void growStackTable() {
        std::vector<StackId> slots(stackSlots_.empty() ? 1024 : stackSlots_.size() * 2, 0);
        size_t mask = slots.size() - 1;
        for (StackId s : stackSlots_) {
            if (s == 0) continue;
            size_t i = stackHashes_[s] & mask;
            while (slots[i] != 0) i = (i + 1) & mask;
            slots[i] = s;
        }
        stackSlots_.swap(slots);
    }

    // Turns a trace entry dict into a row; with path == nullptr returns nullopt on any mismatch,
    // otherwise throws a ParseError naming the key.
    std::optional<uint32_t> rowFromDict(uint32_t node, const std::string* path) {
        tmpItems_.clear();
        doc_.forEach(node, [&](const Value& x) { tmpItems_.push_back(x); });
        return rowFromItems(tmpItems_.data(), tmpItems_.size(), path);
    }
    // An integer field of a trace entry: true when one is given (None stands for "not given");
    // on a mismatch sets bad to what was expected.
    static bool entryInt(const Value& v, bool negativeOk, uint64_t& out, const char*& bad) {
        if (v.tag == Tag::None) return false;
        if (v.tag != Tag::Int && v.tag != Tag::UInt) {
            bad = "an int";
            return false;
        }
        if (!negativeOk && v.tag == Tag::Int && v.asInt() < 0) {
            bad = "a non-negative int";
            return false;
        }
        out = v.bits;
        return true;
    }
    std::optional<uint32_t> rowFromItems(const Value* items, size_t n, const std::string* path) {
        Action act = Action::Other;
        StringId actName = 0;
        bool haveAction = false;
        uint8_t flags = 0;
        uint64_t addr = 0, size = 0, stream = 0, deviceFree = 0;
        int64_t time = -1;
        StackId stack = 0;
        StringId cc = 0, um = 0;
        const char* bad = nullptr;
        StringId badKey = 0;
        for (size_t i = 0; i + 1 < n && !bad; i += 2) {
            const Value& kv = items[i];
            const Value& v = items[i + 1];
            if (kv.tag != Tag::Str) continue;  // foreign keys are ignored
            EntryKey which = kv.ref < entryKeys_.size() ? entryKeys_[kv.ref] : EntryKey::Other;
            switch (which) {
            case EntryKey::Action:
                if (v.tag != Tag::Str) {
                    bad = "a str";
                    break;
                }
                actName = v.ref;
                act = actionOf(v.ref);
                haveAction = true;
                break;
            case EntryKey::Addr:
                if (entryInt(v, false, addr, bad)) flags |= TraceColumns::HasAddr;
                break;
            case EntryKey::Size: entryInt(v, false, size, bad); break;
            case EntryKey::Stream: entryInt(v, false, stream, bad); break;
            case EntryKey::DeviceFree:
                if (entryInt(v, false, deviceFree, bad)) flags |= TraceColumns::HasDeviceFree;
                break;
            case EntryKey::TimeUs: {
                uint64_t t;
                if (entryInt(v, true, t, bad)) {
                    time = static_cast<int64_t>(t);
                    flags |= TraceColumns::HasTime;
                }
                break;
            }
            case EntryKey::Frames:
                if (v.tag == Tag::Stack) {
                    stack = v.ref;
                    flags |= TraceColumns::HasFrames;
                } else if (v.tag == Tag::List && doc_.node(v.ref).count == 0) {
                    flags |= TraceColumns::HasFrames;
                } else if (v.tag != Tag::None) {
                    bad = "a list of frame dicts";
                }
                break;
            case EntryKey::CompileContext:
                if (v.tag == Tag::Str) cc = v.ref;
                break;
            case EntryKey::UserMetadata:
                if (v.tag == Tag::Str) um = v.ref;
                break;
            case EntryKey::Other: break;
            }
            if (bad) badKey = kv.ref;
        }
        if (!haveAction && !bad) {
            if (!path) return std::nullopt;
            throw ParseError(ParseError::kNoOffset, *path, "missing key 'action' (expected a str)");
        }
        if (bad) {
            if (!path) return std::nullopt;
            throw ParseError(ParseError::kNoOffset, *path + "['" + std::string(doc_.strings.view(badKey)) + "']",
                             std::string("expected ") + bad);
        }
        if (act == Action::Oom && !(flags & TraceColumns::HasAddr) && (flags & TraceColumns::HasDeviceFree))
            addr = deviceFree;
        return appendRow({act, actName, flags, addr, size, stream, time, stack, cc, um});
    }

    struct Row {
        Action action;
        StringId actionName;
        uint8_t flags;
        uint64_t addr, size, stream;
        int64_t timeUs;
        StackId stack;
        StringId compileContext, userMetadata;
    };
    // Flattened: a row per trace entry makes these pushes hot, and left to itself the compiler
    // calls each one out of line.
    [[gnu::flatten]] uint32_t appendRow(const Row& r) {
        auto& t = rows_;
        t.action.push_back(r.action);
        t.actionName.push_back(r.actionName);
        t.flags.push_back(r.flags);
        t.addr.push_back(r.addr);
        t.size.push_back(r.size);
        t.stream.push_back(r.stream);
        t.timeUs.push_back(r.timeUs);
        t.stack.push_back(r.stack);
        t.compileContext.push_back(r.compileContext);
        t.userMetadata.push_back(r.userMetadata);
        if (t.rows() % kPrefaultRows == 0) prefaultRows();
        return static_cast<uint32_t>(t.rows() - 1);
    }
    // The pages of the rows after the next kPrefaultRows, while those are being written.
    static constexpr size_t kPrefaultRows = 16384;
    void prefaultRows() {
        auto& t = rows_;
        size_t from = t.rows() + kPrefaultRows;
        if (from + kPrefaultRows > t.action.capacity()) return;  // beyond the reservation
        auto ahead = [&](const auto& column) {
            prefaulter_.request(column.data() + from, kPrefaultRows * sizeof(column[0]));
        };
        ahead(t.action);
        ahead(t.actionName);
        ahead(t.flags);
        ahead(t.addr);
        ahead(t.size);
        ahead(t.stream);
        ahead(t.timeUs);
        ahead(t.stack);
        ahead(t.compileContext);
        ahead(t.userMetadata);
    }

    // --- building from the tree
    [[noreturn]] void fail(const std::string& path, const std::string& what) {
        throw ParseError(ParseError::kNoOffset, path, what);
    }
    std::string keyPath(const std::string& path, StringId key) {
        return path + "['" + std::string(doc_.strings.view(key)) + "']";
    }
    const Value* field(uint32_t dict, StringId key) { return doc_.get(dict, key); }
    uint64_t intField(uint32_t dict, StringId key, const std::string& path, bool required, uint64_t dflt = 0) {
        const Value* v = field(dict, key);
        if (!v || v->tag == Tag::None) {
            if (required) fail(path, "missing key '" + std::string(doc_.strings.view(key)) + "' (expected an int)");
            return dflt;
        }
        if (!v->isInt()) fail(keyPath(path, key), std::string("expected an int, found a ") + tagName(v->tag));
        if (v->tag == Tag::Int && v->asInt() < 0)
            fail(keyPath(path, key), "expected a non-negative int, found " + std::to_string(v->asInt()));
        return v->bits;
    }
    StackId stackOf(const Value* v, const std::string& path) {
        if (!v || v->tag == Tag::None) return 0;
        if (v->tag == Tag::Stack) return v->ref;
        if (v->tag == Tag::List && doc_.node(v->ref).count == 0) return 0;
        fail(path, std::string("expected a list of frame dicts {filename, name, line}, found a ") + tagName(v->tag));
    }
    uint32_t dictNode(const Value& v, const std::string& path, const char* what) {
        if (v.tag != Tag::Dict) fail(path, std::string("expected ") + what + " dict, found a " + tagName(v.tag));
        return v.ref;
    }
    uint32_t listNode(const Value& v, const std::string& path, const char* what) {
        if (v.tag == Tag::Stack) {  // a list of frames where another list was expected
            fail(path, std::string("expected a list of ") + what + ", found a list of frames");
        }
        if (v.tag != Tag::List && v.tag != Tag::Tuple)
            fail(path, std::string("expected a list of ") + what + ", found a " + tagName(v.tag));
        return v.ref;
    }
    std::vector<Value> listItems(const Value& v, const std::string& path, const char* what) {
        uint32_t node = listNode(v, path, what);
        std::vector<Value> out;
        out.reserve(doc_.node(node).count);
        doc_.forEach(node, [&](const Value& x) { out.push_back(x); });
        return out;
    }

    void readSegment(const Value& sv, const std::string& path, std::vector<std::vector<Block>>& blocksOut);
    void readTraces(const Value& tv);
    void readAnnotations(const Value& av);
    void readSettings(const Value& sv);
    std::string toText(const Value& v, int depth);
    DeviceData& deviceData(int d);
    void checkInvariants();

    PickleDocument& doc_;
    Keys k_;
    TraceColumns rows_;
    Prefaulter prefaulter_;
    std::unordered_map<FrameKey, FrameId, FrameKeyHash> frameIndex_;
    FrameRunCache frameRuns_;
    std::vector<FrameId> tmpFrames_;
    std::vector<Value> tmpItems_;
    std::vector<int8_t> actionCache_;
    std::vector<EntryKey> entryKeys_;  // by string id: which trace entry field a key names
    std::vector<StackId> stackSlots_;
    std::vector<uint64_t> stackHashes_{0};  // per stack id; stack 0 is the empty stack
    size_t stackCount_ = 0;
    bool legacy_ = false;
    std::vector<Segment> segTmp_;
};

DeviceData& Builder::deviceData(int d) {
    auto it = std::lower_bound(snap.devices.begin(), snap.devices.end(), d,
                               [](const DeviceData& dd, int v) { return dd.device < v; });
    if (it == snap.devices.end() || it->device != d) {
        it = snap.devices.insert(it, DeviceData{});
        it->device = d;
    }
    return *it;
}

void Builder::readSegment(const Value& sv, const std::string& path, std::vector<std::vector<Block>>& blocksOut) {
    uint32_t s = dictNode(sv, path, "a segment");
    Segment seg;
    uint64_t dev = intField(s, k_.device, path, true);
    if (dev > 1u << 16) fail(keyPath(path, k_.device), "device index " + std::to_string(dev) + " is out of range");
    seg.device = static_cast<int>(dev);
    seg.address = intField(s, k_.address, path, true);
    seg.totalSize = intField(s, k_.total_size, path, true);
    seg.allocatedSize = intField(s, k_.allocated_size, path, false);
    seg.activeSize = intField(s, k_.active_size, path, false);
    seg.requestedSize = intField(s, k_.requested_size, path, false);
    seg.stream = intField(s, k_.stream, path, false);
    if (const Value* t = field(s, k_.segment_type); t && t->tag == Tag::Str) seg.isLarge = t->ref == k_.large;
    if (const Value* e = field(s, k_.is_expandable); e && e->isInt()) seg.isExpandable = e->bits != 0;
    if (const Value* p = field(s, k_.segment_pool_id); p && p->tag == Tag::Tuple) {
        std::vector<Value> ids;
        doc_.forEach(p->ref, [&](const Value& x) { ids.push_back(x); });
        if (ids.size() == 2 && ids[0].isInt() && ids[1].isInt()) {
            seg.poolOwner = ids[0].asInt();
            seg.poolId = ids[1].asInt();
        }
    }
    seg.stack = stackOf(field(s, k_.frames), keyPath(path, k_.frames));
    const Value* bl = field(s, k_.blocks);
    if (!bl) fail(path, "missing key 'blocks' (expected a list of block dicts)");
    std::string bpath = keyPath(path, k_.blocks);
    auto items = listItems(*bl, bpath, "block dicts");
    std::vector<Block> blocks;
    blocks.reserve(items.size());
    uint64_t running = seg.address;
    for (size_t i = 0; i < items.size(); ++i) {
        std::string p = bpath + "[" + std::to_string(i) + "]";
        uint32_t b = dictNode(items[i], p, "a block");
        Block blk;
        blk.size = intField(b, k_.size, p, true);
        blk.requestedSize = intField(b, k_.requested_size, p, false);
        const Value* st = field(b, k_.state);
        if (!st) fail(p, "missing key 'state' (expected 'active_allocated', 'active_pending_free' or 'inactive')");
        if (st->tag != Tag::Str) fail(keyPath(p, k_.state), std::string("expected a str, found a ") + tagName(st->tag));
        std::string_view sn = doc_.strings.view(st->ref);
        if (sn == "active_allocated")
            blk.state = BlockState::ActiveAllocated;
        else if (sn == "active_pending_free" || sn == "active_awaiting_free")
            blk.state = BlockState::ActivePendingFree;
        else if (sn == "inactive")
            blk.state = BlockState::Inactive;
        else
            fail(keyPath(p, k_.state), "unknown block state '" + std::string(sn.substr(0, 60)) + "'");
        const Value* a = field(b, k_.address);
        if (a && a->isInt()) {
            blk.address = a->bits;
        } else {
            blk.address = running;  // torch 2.0 blocks have no address
        }
        running = blk.address + blk.size;
        if (const Value* h = field(b, k_.history); h && (h->tag == Tag::List)) {
            legacy_ = true;
            std::vector<Value> hist;
            doc_.forEach(h->ref, [&](const Value& x) { hist.push_back(x); });
            if (!hist.empty() && hist[0].tag == Tag::Dict)
                blk.stack = stackOf(field(hist[0].ref, k_.frames), keyPath(p, k_.history) + "[0]['frames']");
        } else {
            blk.stack = stackOf(field(b, k_.frames), keyPath(p, k_.frames));
        }
        blocks.push_back(blk);
    }
    blocksOut.push_back(std::move(blocks));
    segTmp_.push_back(seg);  // blocks are attached per device in finish()
}

void Builder::readTraces(const Value& tv) {
    auto lists = listItems(tv, "device_traces", "per-device trace lists");
    // rows of all devices, in device order; the common case of one device keeps its columns as they are
    std::vector<std::vector<uint32_t>> perDevice(lists.size());
    size_t total = 0;
    for (size_t d = 0; d < lists.size(); ++d) {
        std::string path = "device_traces[" + std::to_string(d) + "]";
        if (lists[d].tag == Tag::None) continue;
        uint32_t node = listNode(lists[d], path, "trace entry dicts");  // read in place: it holds every entry
        auto& ids = perDevice[d];
        ids.reserve(doc_.node(node).count);
        doc_.forEach(node, [&](const Value& e) {
            if (e.tag == Tag::Row) {
                ids.push_back(e.ref);
            } else if (e.tag == Tag::Dict) {
                std::string p = path + "[" + std::to_string(ids.size()) + "]";
                ids.push_back(*rowFromDict(e.ref, &p));
            } else {
                fail(path + "[" + std::to_string(ids.size()) + "]",
                     std::string("expected a trace entry dict, found a ") + tagName(e.tag));
            }
        });
        total += ids.size();
        deviceData(static_cast<int>(d)).hasTraceList = true;
    }
    for (size_t d = 0; d < lists.size(); ++d) {
        const auto& ids = perDevice[d];
        if (ids.empty()) continue;
        TraceColumns& out = deviceData(static_cast<int>(d)).trace;
        bool whole = ids.size() == rows_.rows() && total == ids.size();
        for (size_t i = 0; whole && i < ids.size(); ++i) whole = ids[i] == i;
        if (whole) {
            out = std::move(rows_);
            rows_.clear();
            continue;
        }
        out.reserve(ids.size());
        for (uint32_t r : ids) {
            out.action.push_back(rows_.action[r]);
            out.actionName.push_back(rows_.actionName[r]);
            out.flags.push_back(rows_.flags[r]);
            out.addr.push_back(rows_.addr[r]);
            out.size.push_back(rows_.size[r]);
            out.stream.push_back(rows_.stream[r]);
            out.timeUs.push_back(rows_.timeUs[r]);
            out.stack.push_back(rows_.stack[r]);
            out.compileContext.push_back(rows_.compileContext[r]);
            out.userMetadata.push_back(rows_.userMetadata[r]);
        }
    }
    rows_.clear();
}

void Builder::readAnnotations(const Value& av) {
    if (av.tag != Tag::List) {
        snap.warnings.push_back("external_annotations is not a list; ignored");
        return;
    }
    size_t i = 0;
    doc_.forEach(av.ref, [&](const Value& v) {
        ++i;
        if (v.tag != Tag::Dict) return;
        Annotation a;
        const Value* st = field(v.ref, k_.stage);
        const Value* nm = field(v.ref, k_.name);
        if (!st || st->tag != Tag::Str || !nm || nm->tag != Tag::Str) {
            snap.warnings.push_back("external_annotations[" + std::to_string(i - 1) + "] has no stage or name; ignored");
            return;
        }
        a.start = doc_.strings.view(st->ref) == "START";
        a.name = nm->ref;
        if (const Value* d = field(v.ref, k_.device); d && d->isInt()) a.device = static_cast<int>(d->asInt());
        if (const Value* t = field(v.ref, k_.time_us); t && t->isInt()) a.timeUs = t->asInt();
        snap.annotations.push_back(a);
    });
}

std::string Builder::toText(const Value& v, int depth) {
    if (depth > 8) return "...";
    switch (v.tag) {
    case Tag::None: return "None";
    case Tag::Bool: return v.bits ? "True" : "False";
    case Tag::Int: return std::to_string(v.asInt());
    case Tag::UInt: return std::to_string(v.asUInt());
    case Tag::Float: {
        char buf[64];
        std::snprintf(buf, sizeof buf, "%.17g", v.asFloat());
        return buf;
    }
    case Tag::Str:
    case Tag::Bytes: return std::string(doc_.strings.view(v.ref).substr(0, 4096));
    case Tag::Dict: {
        std::string s = "{";
        doc_.forEachPair(v.ref, [&](const Value& k, const Value& x) {
            if (s.size() > 1) s += ", ";
            s += toText(k, depth + 1) + ": " + toText(x, depth + 1);
        });
        return s + "}";
    }
    case Tag::List:
    case Tag::Tuple:
    case Tag::Set: {
        std::string s = v.tag == Tag::List ? "[" : "(";
        bool first = true;
        doc_.forEach(v.ref, [&](const Value& x) {
            if (!first) s += ", ";
            first = false;
            s += toText(x, depth + 1);
        });
        return s + (v.tag == Tag::List ? "]" : ")");
    }
    default: return tagName(v.tag);
    }
}

void Builder::readSettings(const Value& sv) {
    if (sv.tag != Tag::Dict) return;
    doc_.forEachPair(sv.ref, [&](const Value& k, const Value& v) {
        snap.allocatorSettings.emplace_back(toText(k, 0), toText(v, 0));
    });
}

void Builder::checkInvariants() {
    for (const auto& dd : snap.devices) {
        for (size_t i = 0; i < dd.segments.size(); ++i) {
            const Segment& s = dd.segments[i];
            uint64_t sum = 0, alloc = 0, active = 0;
            uint64_t expect = s.address;
            bool contiguous = true;
            for (uint32_t b = s.firstBlock; b < s.firstBlock + s.blockCount; ++b) {
                const Block& blk = dd.blocks[b];
                sum += blk.size;
                if (blk.address != expect) contiguous = false;
                expect = blk.address + blk.size;
                if (blk.state == BlockState::ActiveAllocated) alloc += blk.size;
                if (blk.state != BlockState::Inactive) active += blk.size;
            }
            auto where = "device " + std::to_string(dd.device) + " segment at 0x" + [&] {
                char buf[32];
                std::snprintf(buf, sizeof buf, "%llx", static_cast<unsigned long long>(s.address));
                return std::string(buf);
            }();
            if (sum != s.totalSize)
                snap.warnings.push_back(where + ": block sizes add up to " + std::to_string(sum) + ", total_size is " +
                                        std::to_string(s.totalSize));
            if (!contiguous) snap.warnings.push_back(where + ": blocks are not contiguous");
            if (alloc != s.allocatedSize)
                snap.warnings.push_back(where + ": allocated blocks add up to " + std::to_string(alloc) +
                                        ", allocated_size is " + std::to_string(s.allocatedSize));
            if (active != s.activeSize)
                snap.warnings.push_back(where + ": active blocks add up to " + std::to_string(active) +
                                        ", active_size is " + std::to_string(s.activeSize));
            if (i > 0 && dd.segments[i - 1].address + dd.segments[i - 1].totalSize > s.address)
                snap.warnings.push_back(where + ": overlaps the previous segment");
        }
    }
}

Snapshot Builder::finish(Value root, int protocol, uint64_t fileBytes, const LoadOptions& options) {
    snap.pickleProtocol = protocol;
    snap.fileBytes = fileBytes;
    Value segments;
    if (root.tag == Tag::List) {
        snap.layout = Layout::BareSegmentList;
        segments = root;
    } else if (root.tag == Tag::Dict) {
        const Value* s = field(root.ref, k_.segments);
        if (!s) {
            std::string keys;
            int n = 0;
            doc_.forEachPair(root.ref, [&](const Value& k, const Value&) {
                if (n++ >= 4) return;
                keys += (keys.empty() ? "" : ", ") + ("'" + toText(k, 7).substr(0, 40) + "'");
            });
            fail("top level",
                 "not a PyTorch memory snapshot: the dict has no 'segments' key (it has " +
                     (keys.empty() ? std::string("no keys") : keys + (n > 4 ? ", ..." : "")) +
                     "); expected the output of torch.cuda.memory._dump_snapshot()");
        }
        segments = *s;
        if (const Value* t = field(root.ref, k_.device_traces); t && t->tag != Tag::None) readTraces(*t);
        if (const Value* a = field(root.ref, k_.external_annotations); a) readAnnotations(*a);
        if (const Value* a = field(root.ref, k_.allocator_settings); a) readSettings(*a);
    } else {
        fail("top level", std::string("not a PyTorch memory snapshot: the pickle holds a ") + tagName(root.tag) +
                              ", expected a dict with 'segments' and 'device_traces', or a list of segments");
    }
    if (options.progress) options.progress("building", 0.5);
    auto segItems = listItems(segments, root.tag == Tag::List ? "top level" : "segments", "segment dicts");
    std::vector<std::vector<Block>> blockLists;
    for (size_t i = 0; i < segItems.size(); ++i) {
        if (options.cancel && options.cancel->load(std::memory_order_relaxed)) throw Cancelled();
        readSegment(segItems[i], (root.tag == Tag::List ? "" : "segments") + std::string("[") + std::to_string(i) + "]",
                    blockLists);
    }
    if (legacy_ && snap.layout == Layout::Dict) snap.layout = Layout::Legacy20;
    // group segments by device, in address order
    std::vector<size_t> order(segTmp_.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
        return segTmp_[a].device != segTmp_[b].device ? segTmp_[a].device < segTmp_[b].device
                                                      : segTmp_[a].address < segTmp_[b].address;
    });
    for (size_t i : order) {
        Segment seg = segTmp_[i];
        DeviceData& dd = deviceData(seg.device);
        seg.firstBlock = static_cast<uint32_t>(dd.blocks.size());
        seg.blockCount = static_cast<uint32_t>(blockLists[i].size());
        dd.blocks.insert(dd.blocks.end(), blockLists[i].begin(), blockLists[i].end());
        dd.segments.push_back(seg);
    }
    checkInvariants();
    if (options.progress) options.progress("building", 1.0);
    return std::move(snap);
}

void sniff(ByteReader& in) {
    auto head = in.peek(8);
    if (head.empty()) throw ParseError(0, "empty file; expected a PyTorch memory snapshot pickle");
    size_t i = 0;
    while (i < head.size() && (head[i] == ' ' || head[i] == '\n' || head[i] == '\r' || head[i] == '\t')) ++i;
    if (i < head.size() && (head[i] == '{' || head[i] == '['))
        throw ParseError(0, "this is JSON, not a pickle; memlens reads snapshot pickles written by "
                            "torch.cuda.memory._dump_snapshot()");
    if (head.size() >= 4 && head[0] == 'P' && head[1] == 'K' && head[2] == 3 && head[3] == 4)
        throw ParseError(0, "this is a zip archive (a torch.save() file?), not a memory snapshot pickle");
    if (head.size() >= 2 && head[0] == 0x1f && head[1] == 0x8b)
        throw ParseError(0, "this is gzip-compressed; decompress it first (gunzip)");
    if (head.size() == 8 && std::memcmp(head.data(), "SQLite f", 8) == 0)
        throw ParseError(0, "this is a memlens session (SQLite), not a snapshot pickle; open it in memlens, or list "
                            "its snapshots with `memlens-cli session FILE` and write one out with `memlens-cli export`");
    if (head[0] == 0x80 && head.size() >= 2 && (head[1] < 2 || head[1] > 5))
        throw ParseError(1, "pickle protocol " + std::to_string(head[1]) + " is not supported (2 to 5 are)");
}

Snapshot readFrom(ByteReader& in, const LoadOptions& options) {
    sniff(in);
    PickleDocument doc;
    Builder builder(doc, in.size());
    PickleMachine machine(in, doc, &builder);
    PickleMachine::Progress progress;
    if (options.progress)
        progress = [&](uint64_t off, uint64_t size) {
            options.progress("reading", size ? static_cast<double>(off) / static_cast<double>(size) : 1.0);
        };
    Value root = machine.run(progress, options.cancel);
    if (options.progress) options.progress("reading", 1.0);
    Snapshot snap = builder.finish(root, machine.protocol(), in.size(), options);
    snap.strings = std::move(doc.strings);
    return snap;
}

} // namespace

Snapshot readSnapshotFile(const std::string& path, const LoadOptions& options) {
    ByteReader in(path);
    return readFrom(in, options);
}

Snapshot readSnapshotMemory(std::span<const uint8_t> bytes, const LoadOptions& options) {
    ByteReader in(bytes);
    return readFrom(in, options);
}

} // namespace memlens::model
