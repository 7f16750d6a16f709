#pragma once
// A value of the pickle machine: a scalar, an interned string, or a reference to a container.
#include <cstdint>

namespace memlens::model {

enum class Tag : uint8_t {
    None,
    Bool,
    Int,    // fits int64
    UInt,   // above INT64_MAX, fits uint64
    Float,
    Str,    // ref = StringId
    Bytes,  // ref = StringId (raw bytes)
    List,   // ref = node
    Dict,
    Tuple,
    Set,
    // Collapsed forms made by a PickleHooks while loading (domain objects, not pickle types).
    Frame,  // ref = frame id
    Stack,  // ref = stack id
    Row,    // ref = row id
    Block,  // ref = block id (a segment's block dict)
    Annotation,  // ref = annotation id (an external_annotations dict)
    Unset,  // an empty memo slot
};

struct Value {
    uint64_t bits = 0;
    uint32_t ref = 0;
    Tag tag = Tag::None;

    static Value none() { return {}; }
    static Value boolean(bool b) { return {b ? 1u : 0u, 0, Tag::Bool}; }
    static Value integer(int64_t v) { return {static_cast<uint64_t>(v), 0, Tag::Int}; }
    static Value uinteger(uint64_t v) {
        return v > static_cast<uint64_t>(INT64_MAX) ? Value{v, 0, Tag::UInt} : integer(static_cast<int64_t>(v));
    }
    static Value real(double d);
    static Value str(uint32_t id) { return {0, id, Tag::Str}; }
    static Value bytes(uint32_t id) { return {0, id, Tag::Bytes}; }
    static Value node(Tag t, uint32_t id) { return {0, id, t}; }

    bool isContainer() const { return tag >= Tag::List && tag <= Tag::Set; }
    bool isInt() const { return tag == Tag::Int || tag == Tag::UInt || tag == Tag::Bool; }
    int64_t asInt() const { return static_cast<int64_t>(bits); }
    uint64_t asUInt() const { return bits; }
    double asFloat() const;

    // Field by field. A plain copy moves the 13 bytes of data as two overlapping words, [0, 8)
    // and [5, 13); where the source was just stored from the two registers a Value is returned in,
    // the second word reads across both stores, the store buffer cannot forward it, and the
    // pickle machine stalls on its hottest copies (a push, a stored item).
    [[gnu::always_inline]] void assign(Value v) {
        bits = v.bits;
        ref = v.ref;
        tag = v.tag;
    }
};

const char* tagName(Tag t);

} // namespace memlens::model
