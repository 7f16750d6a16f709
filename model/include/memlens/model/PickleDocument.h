#pragma once
// The data a pickle describes, stored compactly: containers are nodes whose items live in one
// shared pool; strings are interned; frames, stacks and trace rows may be collapsed by hooks.
#include "memlens/model/PickleValue.h"
#include "memlens/model/StringTable.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace memlens::model {

class Prefaulter;

class PickleDocument {
public:
    PickleDocument();
    ~PickleDocument();
    PickleDocument(const PickleDocument&) = delete;
    PickleDocument& operator=(const PickleDocument&) = delete;

    struct Node {
        uint32_t head = kNone;  // first chunk; once collapsed: the collapsed object's id
        uint32_t tail = kNone;  // last chunk
        uint32_t count = 0;     // items (a dict counts keys and values)
        uint16_t depth = 1;     // 1 + deepest child
        Tag kind = Tag::List;
        uint8_t state = 0;      // bit 7: used (stored into a container); bits 0-4: collapsed tag

        bool used() const { return state & 0x80; }
        void markUsed() { state |= 0x80; }
        bool isCollapsed() const { return (state & 0x1F) != 0; }
        Value collapsedValue() const { return Value::node(static_cast<Tag>(state & 0x1F), head); }
        void collapse(Value v) {
            head = v.ref;
            tail = kNone;
            state = static_cast<uint8_t>((state & 0x80) | static_cast<uint8_t>(v.tag));
        }
        void uncollapse() {
            head = tail = kNone;
            count = 0;
            state &= 0x80;
        }
    };
    static_assert(sizeof(Value) == 16);
    struct Chunk {
        uint32_t begin;  // index into the pool, or for a row range the first row
        uint32_t count;
        uint32_t next;
        bool rowRange = false;  // the rows begin, begin + 1, ... (a trace list), stored as a range
    };
    static constexpr uint32_t kNone = ~uint32_t(0);

    StringTable strings;

    uint32_t newNode(Tag kind) {
        if (!free_.empty()) {
            uint32_t id = free_.back();
            free_.pop_back();
            nodes_[id] = Node{};
            nodes_[id].kind = kind;
            return id;
        }
        nodes_.emplace_back();
        nodes_.back().kind = kind;
        return static_cast<uint32_t>(nodes_.size() - 1);
    }
    // A node nothing refers to any more (collapsed, and its memo slot rewritten) is reused.
    void recycle(uint32_t id) { free_.push_back(id); }
    // Address space for what a file is likely to need: the kernel backs only the pages used, and
    // the pool is not copied (and its pages touched twice) each time it would have doubled. A
    // large reservation (a large file) also starts the prefaulting thread (prefaultAhead()).
    void reserve(size_t nodes, size_t items);
    // Keeps the pages of v's reservation up to `ahead` elements past its end faulted in and zeroed
    // on a second thread, before their first write, where reserve() started one. For the reader's
    // large arrays (the pool, the machine's memo, the trace columns): their page faults would
    // otherwise be a large part of the parsing thread's time. Call it after each growth of v;
    // mark (0 at first) is how far v has been asked for: each call past mark - ahead asks for the
    // next range. The mark, not v's size, says where to go on, since a vector may shrink and grow
    // again (the pool, as collapsed nodes release their items).
    template <class T>
    [[gnu::always_inline]] void prefaultAhead(const std::vector<T>& v, size_t& mark, size_t ahead) const {
        // at least 256 KiB ahead: for a column of a byte a row, `ahead` rows are a few KiB, and
        // the parsing thread reached each new page before the prefaulting thread did
        ahead = std::max(ahead, kPrefaultMinBytes / sizeof(T));
        if (v.size() + ahead > mark) [[unlikely]]
            mark = prefaultRange(v.data(), sizeof(T), mark, std::max(mark, v.size()) + ahead, v.capacity());
    }
    Node& node(uint32_t id) { return nodes_[id]; }
    const Node& node(uint32_t id) const { return nodes_[id]; }
    size_t nodeCount() const { return nodes_.size(); }

    // Appends values to a container node. Rows in order appended to a list take no room in the
    // pool: a trace of millions of entries is such a list.
    void append(uint32_t id, const Value* first, size_t n);
    // Drops the node's items if they are at the end of the pool (after collapsing it).
    void release(uint32_t id);

    template <class F>
    void forEach(uint32_t id, F&& f) const {
        for (uint32_t c = nodes_[id].head; c != kNone; c = chunks_[c].next) {
            const Chunk& ch = chunks_[c];
            if (ch.rowRange) {
                for (uint32_t i = 0; i < ch.count; ++i) f(Value::node(Tag::Row, ch.begin + i));
            } else {
                for (uint32_t i = 0; i < ch.count; ++i) f(pool_[ch.begin + i]);
            }
        }
    }
    // For dicts (which hold no row ranges): calls f(key, value) for each pair.
    template <class F>
    void forEachPair(uint32_t id, F&& f) const {
        const Value* key = nullptr;
        forEach(id, [&](const Value& v) {
            if (!key) {
                key = &v;
            } else {
                f(*key, v);
                key = nullptr;
            }
        });
    }
    // The value stored under the string key in a dict node, or nullptr.
    const Value* get(uint32_t dict, StringId key) const;

    size_t poolSize() const { return pool_.size(); }
    size_t memoryBytes() const;

private:
    std::vector<Node> nodes_;
    std::vector<uint32_t> free_;
    std::vector<Chunk> chunks_;
    std::vector<Value> pool_;
    // the pool's prefaulting mark (prefaultAhead)
    static constexpr size_t kPoolAhead = 65536;
    static constexpr size_t kPrefaultMinBytes = size_t(256) << 10;
    size_t poolPrefaulted_ = 0;
    std::unique_ptr<Prefaulter> prefaulter_;
    // Asks for elements [from, min(to, capacity)) of the array at data; returns the new mark:
    // kPrefaultedAll where there is nothing more to ask for (no thread, the reservation reached).
    static constexpr size_t kPrefaultedAll = ~size_t(0) / 2;
    [[gnu::noinline]] size_t prefaultRange(const void* data, size_t elementBytes, size_t from, size_t to,
                                           size_t capacity) const;
};

} // namespace memlens::model
