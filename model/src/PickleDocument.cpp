#include "memlens/model/PickleDocument.h"

#include "Prefaulter.h"


#include <algorithm>
#include <bit>
#include <cstring>

namespace memlens::model {

PickleDocument::PickleDocument() = default;
PickleDocument::~PickleDocument() = default;

Value Value::real(double d) { return {std::bit_cast<uint64_t>(d), 0, Tag::Float}; }
double Value::asFloat() const {
    if (tag == Tag::Float) return std::bit_cast<double>(bits);
    if (tag == Tag::UInt) return static_cast<double>(bits);
    return static_cast<double>(static_cast<int64_t>(bits));
}

const char* tagName(Tag t) {
    switch (t) {
    case Tag::None: return "None";
    case Tag::Bool: return "bool";
    case Tag::Int:
    case Tag::UInt: return "int";
    case Tag::Float: return "float";
    case Tag::Str: return "str";
    case Tag::Bytes: return "bytes";
    case Tag::List: return "list";
    case Tag::Dict: return "dict";
    case Tag::Tuple: return "tuple";
    case Tag::Set: return "set";
    case Tag::Frame: return "frame dict";
    case Tag::Stack: return "list of frames";
    case Tag::Row: return "trace entry dict";
    case Tag::Block: return "block dict";
    case Tag::Annotation: return "annotation dict";
    case Tag::Unset: return "nothing";
    }
    return "?";
}


namespace {
bool rowsInOrder(const Value* first, size_t n) {
    for (size_t i = 0; i < n; ++i)
        if (first[i].tag != Tag::Row || first[i].ref != first[0].ref + i) return false;
    return true;
}
} // namespace

void PickleDocument::append(uint32_t id, const Value* first, size_t n) {
    if (n == 0) return;
    Node& nd = nodes_[id];
    bool rows = nd.kind == Tag::List && rowsInOrder(first, n);
    auto begin = rows ? first[0].ref : static_cast<uint32_t>(pool_.size());
    const Chunk* tail = nd.tail == kNone ? nullptr : &chunks_[nd.tail];
    if (tail && tail->rowRange == rows && uint64_t(tail->begin) + tail->count == begin) {  // continues the last chunk
        chunks_[nd.tail].count += static_cast<uint32_t>(n);
    } else {
        chunks_.push_back({begin, static_cast<uint32_t>(n), kNone, rows});
        auto c = static_cast<uint32_t>(chunks_.size() - 1);
        if (nd.tail == kNone)
            nd.head = c;
        else
            chunks_[nd.tail].next = c;
        nd.tail = c;
    }
    if (!rows) {
        pool_.insert(pool_.end(), first, first + n);
        prefaultAhead(pool_, poolPrefaulted_, kPoolAhead);
    }
    nd.count += static_cast<uint32_t>(n);
}

size_t PickleDocument::prefaultRange(const void* data, size_t elementBytes, size_t from, size_t to,
                                     size_t capacity) const {
    if (!prefaulter_ || from >= capacity) return kPrefaultedAll;  // nothing to do, now or later
    to = std::min(to, capacity);
    if (to > from)
        prefaulter_->request(static_cast<const char*>(data) + from * elementBytes, (to - from) * elementBytes);
    return to;
}

void PickleDocument::release(uint32_t id) {
    Node& nd = nodes_[id];
    if (nd.head == kNone || nd.head != nd.tail || chunks_[nd.head].rowRange) return;
    const Chunk& ch = chunks_[nd.head];
    if (ch.begin + ch.count != pool_.size()) return;
    pool_.resize(ch.begin);
    if (nd.head == chunks_.size() - 1) chunks_.pop_back();
    nd.head = nd.tail = kNone;
}

void PickleDocument::reserve(size_t nodes, size_t items) {
    nodes_.reserve(nodes);
    pool_.reserve(items);
    chunks_.reserve(nodes);
    if (!prefaulter_ && pool_.capacity() * sizeof(Value) >= (size_t(32) << 20)) {
        prefaulter_ = std::make_unique<Prefaulter>();
        poolPrefaulted_ = 0;
        prefaultAhead(pool_, poolPrefaulted_, kPoolAhead);
    }
}

const Value* PickleDocument::get(uint32_t dict, StringId key) const {
    const Value* found = nullptr;
    const Value* k = nullptr;
    for (uint32_t c = nodes_[dict].head; c != kNone; c = chunks_[c].next) {
        const Chunk& ch = chunks_[c];
        for (uint32_t i = 0; i < ch.count; ++i) {
            const Value& v = pool_[ch.begin + i];
            if (!k) {
                k = &v;
            } else {
                if (k->tag == Tag::Str && k->ref == key) found = &v;  // last one wins, as in Python
                k = nullptr;
            }
        }
    }
    return found;
}

size_t PickleDocument::memoryBytes() const {
    return nodes_.capacity() * sizeof(Node) + chunks_.capacity() * sizeof(Chunk) + pool_.capacity() * sizeof(Value) +
           strings.bytes();
}

} // namespace memlens::model
