#pragma once
// A pickle machine that understands only data: protocols 0 to 5, every opcode that builds
// dicts, lists, tuples, sets, strings, bytes, numbers, booleans and None. Opcodes that import
// or call anything are refused with an error naming the opcode and its byte offset.
#include "memlens/model/ByteReader.h"
#include "memlens/model/PickleDocument.h"

#include <atomic>
#include <functional>
#include <memory>
#include <unordered_map>
#include <vector>

namespace memlens::model {

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
    // Fast path of absorbList for a list made only of frames already seen (given by their ids).
    // For a list of the same bytes again (the same memo gets of the same frames) the machine
    // reuses the answer without calling this.
    virtual bool absorbFrames(PickleDocument& doc, const uint32_t* frameIds, size_t n, Value& out) { return false; }
    virtual void expandList(PickleDocument& doc, Value collapsed, std::vector<Value>& items) {}
};

struct PickleLimits {
    uint32_t maxDepth = 1000;        // containers nested deeper are refused
    size_t maxStack = size_t(1) << 25;  // values on the machine's stack at once
    size_t maxMarks = size_t(1) << 20;  // open MARKs at once
    size_t maxSparseMemo = size_t(1) << 22;
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
        data_[size_++] = v;
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

class PickleMachine {
public:
    PickleMachine(ByteReader& in, PickleDocument& doc, PickleHooks* hooks = nullptr, PickleLimits limits = {});

    using Progress = std::function<void(uint64_t offset, uint64_t size)>;
    // Runs to STOP and returns the top of the stack. Throws ParseError or Cancelled.
    Value run(const Progress& progress = {}, const std::atomic<bool>* cancel = nullptr);

    int protocol() const { return protocol_; }

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
    size_t frameRun(const uint8_t* p, size_t avail);
    static size_t measureFrameRun(const uint8_t* p, size_t avail);
    bool framesOfRun(const uint8_t* p, size_t len);
    Value makeString(const uint8_t* p, uint64_t n, bool bytes);

    ByteReader& in_;
    PickleDocument& doc_;
    PickleHooks* hooks_;
    PickleLimits limits_;
    ValueStack stack_;
    std::vector<size_t> marks_;
    // Memo slots take 8 bytes: the tag and a 32-bit reference; numbers (rarely memoised) keep
    // their 64 bits in memoNumbers_.
    struct MemoSlot {
        uint32_t ref = 0;
        Tag tag = Tag::Unset;
    };
    MemoSlot encode(Value v) {
        if (v.tag == Tag::Int || v.tag == Tag::UInt || v.tag == Tag::Float) {
            memoNumbers_.push_back(v.bits);
            return {static_cast<uint32_t>(memoNumbers_.size() - 1), v.tag};
        }
        return {v.tag == Tag::Bool ? static_cast<uint32_t>(v.bits) : v.ref, v.tag};
    }
    Value decode(MemoSlot m) const {
        if (m.tag == Tag::Int || m.tag == Tag::UInt || m.tag == Tag::Float) return {memoNumbers_[m.ref], 0, m.tag};
        if (m.tag == Tag::Bool) return {m.ref, 0, Tag::Bool};
        return {0, m.ref, m.tag};
    }
    std::vector<MemoSlot> memo_;
    // Per container node: 1 + the memo slot that refers to it, 0 for none, kShared when it may be
    // referred to from elsewhere too (a second memo slot, DUP, a memo get): only unshared
    // collapsed nodes are recycled.
    static constexpr uint32_t kShared = ~uint32_t(0);
    std::vector<uint32_t> nodeMemo_;
    std::vector<uint64_t> memoNumbers_;
    std::vector<uint32_t> runIds_;
    size_t runCount_ = 0;
    // Frames lists already absorbed, by their bytes, with what the hooks made of them.
    class KnownRuns {
    public:
        const Value* find(const uint8_t* p, size_t len, uint64_t hash) const;
        void add(const uint8_t* p, size_t len, uint64_t hash, Value v);
        void clear();

    private:
        struct Slot {
            uint64_t hash = 0;
            uint32_t begin = 0;
            uint32_t len = 0;  // 0: empty
            Value value;
        };
        void grow();
        std::vector<Slot> slots_;  // open addressing; a power of two
        std::vector<uint8_t> bytes_;
        size_t count_ = 0;
    };
    KnownRuns knownRuns_;
    std::unordered_map<uint64_t, Value> sparseMemo_;
    uint64_t opOffset_ = 0;
    int protocol_ = 0;
};

} // namespace memlens::model
