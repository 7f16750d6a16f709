#pragma once
// A pickle machine that understands only data: protocols 0 to 5, every opcode that builds
// dicts, lists, tuples, sets, strings, bytes, numbers, booleans and None. Opcodes that import
// or call anything are refused with an error naming the opcode and its byte offset.
#include "memlens/model/ByteReader.h"
#include "memlens/model/HandoffQueue.h"
#include "memlens/model/MemoSlots.h"
#include "memlens/model/PickleDocument.h"

#include <atomic>
#include <cstring>
#include <functional>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

namespace memlens::model {

// A memo slot, read: the tag and a 32-bit reference (numbers keep their 64 bits elsewhere).
struct MemoSlot {
    uint32_t ref = 0;
    Tag tag = Tag::Unset;
};

// Memo references kept beside a packed memo, by memo index.
using WideMemoRefs = std::unordered_map<uint64_t, uint32_t>;

// A memo slot as the machine keeps it: 4 bytes, the tag in the top 5 bits (XOR Unset, so that a
// zeroed slot is unset) and the reference in the low 27. A reference of kWide or more (a file
// with more than 134 million strings, nodes or rows memoised) is kept in a table beside, by memo
// index, and the slot's reference says kWide. A torch trace memoises about three values an
// entry: 4 bytes a slot instead of 8 is 12 bytes an entry less while the file is read.
struct PackedMemo {
    static constexpr uint32_t kWide = (uint32_t(1) << 27) - 1;
    static_assert(static_cast<unsigned>(Tag::Unset) < 32, "a tag takes 5 bits");
    // ref: below kWide, or kWide for a reference kept beside
    static uint32_t pack(Tag tag, uint32_t ref) {
        return (static_cast<uint32_t>(static_cast<uint8_t>(tag) ^ static_cast<uint8_t>(Tag::Unset)) << 27) | ref;
    }
    static Tag tag(uint32_t s) { return static_cast<Tag>(static_cast<uint8_t>(s >> 27) ^ static_cast<uint8_t>(Tag::Unset)); }
    static uint32_t ref(uint32_t s) { return s & kWide; }
    // The slot at index of a packed memo, its reference looked up in wide where it is kept there.
    [[gnu::always_inline]] static MemoSlot read(MemoSlots& memo, uint64_t index, const WideMemoRefs& wide) {
        const uint32_t packed = memo.read(index);
        MemoSlot m{ref(packed), tag(packed)};
        if (m.ref == kWide) [[unlikely]]
            m.ref = wide.at(index);
        return m;
    }
};

// A list written as MARK, memo gets (BINGET, LONG_BINGET) and APPENDS right after the empty list
// (`] ( h h j ... e`), seen by the machine before it runs those opcodes, with the memo they read.
class MemoGetRun {
public:
    MemoGetRun(std::span<const uint8_t> bytes, MemoSlots& memo, const WideMemoRefs& wide)
        : bytes_(bytes), memo_(memo), wide_(wide) {}
    // The gets and the closing APPENDS, as they are in the file.
    std::span<const uint8_t> bytes() const { return bytes_; }
    size_t gets() const { return bytes_.size() / 2; }  // at most (a get takes 2 bytes or 5)
    // Calls f(const MemoSlot&) with the slot each get reads, in order; returns false as soon as f
    // does or a get reads past the memo.
    template <class F>
    bool forEachSlot(F&& f) const {
        const uint8_t* p = bytes_.data();
        const size_t len = bytes_.size();
        for (size_t pos = 0; pos + 1 < len;) {
            uint64_t index;
            if (p[pos] == 'h') {
                index = p[pos + 1];
                pos += 2;
            } else {
                uint32_t le;
                std::memcpy(&le, p + pos + 1, 4);  // little-endian host, as the machine
                index = le;
                pos += 5;
            }
            if (index >= memo_.size() || !f(PackedMemo::read(memo_, index, wide_))) return false;
        }
        return true;
    }

private:
    std::span<const uint8_t> bytes_;
    MemoSlots& memo_;  // read() (a block read may be stored anew)
    const WideMemoRefs& wide_;
};

// Lets a reader replace finished containers by compact domain objects while loading.
class PickleHooks {
public:
    virtual ~PickleHooks() = default;
    // Called once for each container node when it is first stored into another container
    // (or returned at STOP). Returns the value to store instead (or v itself).
    virtual Value collapse(PickleDocument& doc, Value v) = 0;
    // Called when one SETITEMS fills an empty dict, with its keys and values (already collapsed).
    // Returning true stores `out` in place of the dict, which then keeps no items of its own.
    virtual bool absorbDict(PickleDocument& doc, const Value* items, size_t n, Value& out) { return false; }
    // Likewise when one APPENDS fills an empty list. A list absorbed this way that gets more items
    // before it is used is expanded again with expandList.
    virtual bool absorbList(PickleDocument& doc, const Value* items, size_t n, Value& out) { return false; }
    // Fast path of absorbList for a list made only of memo gets, before they are run: returning
    // true stores `out` in place of the list, and the machine skips the run's bytes.
    virtual bool absorbMemoRun(PickleDocument& doc, const MemoGetRun& run, Value& out) { return false; }
    // Before that: a run of memo gets the hooks recognise at p by its bytes alone (avail of them
    // buffered), without its length measured; returns the bytes it takes (APPENDS included) and
    // its value in out, or 0 to measure it and offer it to absorbMemoRun.
    virtual size_t recallMemoRun(PickleDocument& doc, const uint8_t* p, size_t avail, Value& out) { return 0; }
    // Plans, for dicts read by a template (PickleLimits::dictTemplates), where the hooks give
    // planRecords(). The dict just absorbed (items, n) is the first of a template: the next dicts
    // of its bytes have other values at the items numbered holeItems (numbers, memo gets) and the
    // rest as they are. The hooks may return a plan (0 or more) to absorb such a dict from those
    // values alone, with the holes whose value it refuses when negative (refusedNegative, bit h:
    // hole h), or -1. Asked only where there are at most kMaxPlannedHoles holes, and where each
    // memo get among them gave a stack.
    static constexpr size_t kMaxPlannedHoles = 16;
    virtual int32_t planDict(const Value* items, size_t n, const uint8_t* holeItems, size_t holes,
                             uint16_t& refusedNegative) {
        return -1;
    }
    // Where the dicts of a plan go, without a call a dict: the machine writes each one's record to
    // the queue, its plan << 1 | 1 then the values at its holes, in order, as plain 64-bit
    // numbers (a number's value: BININT1, BININT2, BININT, LONG1 of at most 8 bytes; for a memo
    // get, the ref of the stack its slot holds; the dict is read item by item where the slot
    // holds anything else, or where a hole the plan refuses negative is), and stores
    // Value::node(tag, (*numbered)++) for the dict: what absorbDict would have stored. Asked once,
    // when the machine is made; no plans are asked for where it gives no queue.
    struct PlanRecords {
        HandoffQueue* queue = nullptr;
        size_t* numbered = nullptr;
        Tag tag = Tag::Unset;
    };
    virtual PlanRecords planRecords() { return {}; }
    // A memo slot that held `old` is given another value (a PUT over it).
    virtual void memoRewritten(uint64_t index, Value old) {}
    virtual void expandList(PickleDocument& doc, Value collapsed, std::vector<Value>& items) {}
};

struct PickleLimits {
    uint32_t maxDepth = 1000;        // containers nested deeper are refused
    size_t maxStack = size_t(1) << 25;  // values on the machine's stack at once
    size_t maxMarks = size_t(1) << 20;  // open MARKs at once
    size_t maxSparseMemo = size_t(1) << 22;
    // Memoised references from this value on are kept beside the packed memo (at most
    // PackedMemo::kWide; tests set it low to take that path with small files).
    uint32_t memoWideFrom = PackedMemo::kWide;
    // A dict written whole (a trace entry, a block, a frame) is read from its bytes past the
    // stack where the hooks absorb it (the same result; tests turn this off to compare).
    bool wholeDicts = true;
    // Such a dict whose bytes are those of one read before, its numbers aside, is read by that
    // dict's template (DictTemplates): the same result; tests turn this off to compare.
    bool dictTemplates = true;
};

// The machine's stack: a plain growable array whose push stays inline in the opcode loop.
class ValueStack {
public:
    size_t size() const { return size_; }
    bool empty() const { return size_ == 0; }
    Value* data() { return data_.get(); }
    Value& operator[](size_t i) { return data_[i]; }
    Value& back() { return data_[size_ - 1]; }
    void pop_back() { --size_; }
    void resize(size_t n) { size_ = n; }  // shrinks only
    [[gnu::always_inline]] void push_back(Value v) {
        if (size_ == cap_) [[unlikely]]
            grow();
        data_[size_++].assign(v);
    }
    void reserve(size_t n) {
        while (cap_ < n) grow();
    }

private:
    [[gnu::noinline]] void grow() {
        size_t cap = cap_ ? cap_ * 2 : 1024;
        std::unique_ptr<Value[]> d(new Value[cap]);
        std::copy(data_.get(), data_.get() + size_, d.get());
        data_ = std::move(d);
        cap_ = cap;
    }
    std::unique_ptr<Value[]> data_;
    size_t size_ = 0;
    size_t cap_ = 0;
};

class DictTemplates;

class PickleMachine {
public:
    PickleMachine(ByteReader& in, PickleDocument& doc, PickleHooks* hooks = nullptr, PickleLimits limits = {});
    ~PickleMachine();
    PickleMachine(const PickleMachine&) = delete;
    PickleMachine& operator=(const PickleMachine&) = delete;

    using Progress = std::function<void(uint64_t offset, uint64_t size)>;
    // Runs to STOP and returns the top of the stack. Throws ParseError or Cancelled.
    Value run(const Progress& progress = {}, const std::atomic<bool>* cancel = nullptr);

    int protocol() const { return protocol_; }
    // How many dicts were read whole, past the stack (PickleLimits::wholeDicts).
    uint64_t wholeDictsRead() const { return wholeDictsRead_; }
    // How many of those were read by a template (DictTemplates): their numbers only.
    uint64_t dictsReplayed() const { return dictsReplayed_; }

private:
    [[noreturn]] void fail(const std::string& what) const;
    [[gnu::always_inline]] void push(Value v) {
        if (stack_.size() >= limits_.maxStack) stackFull();
        stack_.push_back(v);
    }
    [[noreturn]] void stackFull() const;
    Value pop();
    Value& top() {
        size_t floor = marks_.empty() ? 0 : marks_.back();
        if (stack_.size() <= floor) stackUnderflow();
        return stack_.back();
    }
    [[noreturn]] void stackUnderflow() const;
    size_t markBase();  // pops the last MARK and returns the stack index it points to
    Value store(Value v);  // marks a container as used and applies collapsing to it
    Value resolve(Value v) const {  // a container that was absorbed stands for its collapsed value
        if (v.isContainer()) {
            const auto& nd = doc_.node(v.ref);
            if (nd.isCollapsed()) return nd.collapsedValue();
        }
        return v;
    }
    void appendTo(Value container, size_t from, bool batch = false);  // moves stack[from..] into the container
    void memoPut(uint64_t index, Value v);
    // memoPut at the end of the memo; inline for a value that is no container (a string, a stack,
    // a row: nearly every slot a snapshot's entries add).
    [[gnu::always_inline]] void memoAppend(Value v) {
        if (v.isContainer()) [[unlikely]] {
            memoPut(memo_.size(), v);
            return;
        }
        memo_.push_back(encodeAt(memo_.size(), v));
        memoPushed();
    }
    Value memoGet(uint64_t index);
    Value readLong(const uint8_t* p, uint64_t n);
    std::string readLine();
    Value parseDecimal(const std::string& text, bool allowBoolForm);
    Value makeTuple(size_t from);
    uint32_t makeNode(Tag kind);
    void markShared(const Value& v) {
        if (v.isContainer()) nodeMemo_[v.ref] = kShared;
    }
    void collapsed(uint32_t id, Value c);  // rewrites the node's memo slot to the collapsed value
    Value emptyList();  // the node that stands for every unshared empty list once it is stored
    uint32_t emptyList_ = PickleDocument::kNone;
    [[gnu::always_inline]] inline size_t memoGetRun(const uint8_t* p, size_t avail);  // in run(): once per list
    // A run of memo gets at p, right after the MARK of an empty list: the bytes it takes (APPENDS
    // included) and what the hooks made of it, or 0.
    [[gnu::always_inline]] inline size_t memoRunAt(const uint8_t* p, size_t avail, Value& out);
    // A dict written whole in the bytes at p (EMPTY_DICT MEMOIZE MARK, keys and values, SETITEMS),
    // its values scalars, short strings, memo gets of strings and collapsed values, and frames
    // lists of memo gets: a trace entry, a block, a frame. Read without the stack and offered to
    // the hooks' absorbDict; returns the bytes taken, or 0 (anything else, or not absorbed) to
    // leave it to run(), nothing changed but strings and stacks interned.
    size_t wholeDict(const uint8_t* p, size_t avail);
    [[gnu::always_inline]] inline bool slotAsIs(uint64_t idx, Value& v);  // wholeDict's and replayDict's memo gets
    // Before that: the dict at p read by the template predicted for it, or 0.
    size_t replayDict(const uint8_t* p, size_t avail);
    // The rest of a replay by template t: out (the dict's value) and the template's values into
    // the memo, out onto the stack; returns length.
    [[gnu::always_inline]] inline size_t replayed(uint32_t t, Value out, size_t length);
    void forgetTemplates();  // a memo slot changes: templates may name other values now
    static constexpr size_t kWholeDictItems = 64;  // absorbDict takes no more
    uint64_t wholeDictsRead_ = 0;
    uint64_t dictsReplayed_ = 0;
    std::unique_ptr<DictTemplates> templates_;
    std::unique_ptr<Value[]> wholeItems_ = std::make_unique<Value[]>(kWholeDictItems);
    std::unique_ptr<Value[]> wholePuts_ = std::make_unique<Value[]>(kWholeDictItems + 1);
    static size_t measureMemoGetRun(const uint8_t* p, size_t avail);
    Value makeString(const uint8_t* p, uint64_t n, bool bytes);

    ByteReader& in_;
    PickleDocument& doc_;
    PickleHooks* hooks_;
    PickleHooks::PlanRecords records_;  // the hooks' (planRecords()), asked once
    PickleLimits limits_;
    ValueStack stack_;
    std::vector<size_t> marks_;
    // Memo slots are PackedMemo values (4 bytes; older ones sealed in compact blocks by
    // MemoSlots); numbers (rarely memoised) keep their 64 bits in memoNumbers_, references that
    // do not fit in 27 bits in wideRefs_.
    // inline for what memoising a trace stores (a string, a container, a collapsed object)
    [[gnu::always_inline]] uint32_t encodeAt(uint64_t index, Value v) {
        if (memoNumber(v.tag) || v.ref >= limits_.memoWideFrom || !wideRefs_.empty()) [[unlikely]]
            return encodeBeside(index, v);
        return PackedMemo::pack(v.tag, v.ref);
    }
    // Bool to Float: kept beside the packed slot (encodeBeside)
    static bool memoNumber(Tag tag) { return static_cast<unsigned>(tag) - static_cast<unsigned>(Tag::Bool) <= 3u; }
    // Whether memoAppend stores v as PackedMemo::pack(v.tag, v.ref) while wideRefs_ is empty:
    // no container, no number, a reference that fits.
    bool packsAsIs(Value v) const { return !v.isContainer() && !memoNumber(v.tag) && v.ref < limits_.memoWideFrom; }
    [[gnu::noinline]] uint32_t encodeBeside(uint64_t index, Value v) {
        uint32_t ref;
        if (v.tag == Tag::Int || v.tag == Tag::UInt || v.tag == Tag::Float) {
            memoNumbers_.push_back(v.bits);
            ref = static_cast<uint32_t>(memoNumbers_.size() - 1);
        } else {
            ref = v.tag == Tag::Bool ? static_cast<uint32_t>(v.bits) : v.ref;
        }
        if (ref >= limits_.memoWideFrom) [[unlikely]] {
            wideRefs_[index] = ref;
            return PackedMemo::pack(v.tag, PackedMemo::kWide);
        }
        if (!wideRefs_.empty()) [[unlikely]]
            wideRefs_.erase(index);
        return PackedMemo::pack(v.tag, ref);
    }
    MemoSlot slotAt(uint64_t index) { return PackedMemo::read(memo_, index, wideRefs_); }
    Value decode(MemoSlot m) const {
        if (m.tag == Tag::Int || m.tag == Tag::UInt || m.tag == Tag::Float) return {memoNumbers_[m.ref], 0, m.tag};
        if (m.tag == Tag::Bool) return {m.ref, 0, Tag::Bool};
        return {0, m.ref, m.tag};
    }
    MemoSlots memo_;  // PackedMemo values
    WideMemoRefs wideRefs_;
    // Where the document prefaults (a large file), the pages of the memo's sealed blocks are taken
    // (faulted and zeroed) on its thread kMemoAhead words before they are written: a 600 MB
    // snapshot memoises millions of values.
    static constexpr size_t kMemoAhead = 16384;
    size_t memoPrefaulted_ = 0;
    [[gnu::always_inline]] void memoPushed() { doc_.prefaultAhead(memo_.words(), memoPrefaulted_, kMemoAhead); }
    // Per container node: 1 + the memo slot that refers to it, 0 for none, kShared when it may be
    // referred to from elsewhere too (a second memo slot, DUP, a memo get): only unshared
    // collapsed nodes are recycled.
    static constexpr uint32_t kShared = ~uint32_t(0);
    std::vector<uint32_t> nodeMemo_;
    std::vector<uint64_t> memoNumbers_;
    std::unordered_map<uint64_t, Value> sparseMemo_;
    uint64_t opOffset_ = 0;
    int protocol_ = 0;
};

} // namespace memlens::model
