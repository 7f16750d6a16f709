#include "memlens/model/PickleMachine.h"

#include "DictTemplates.h"

#include "memlens/model/ParseError.h"

#include <algorithm>
#include <bit>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace memlens::model {

namespace {

uint16_t le16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }
uint32_t le32(const uint8_t* p) {
    return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) | (static_cast<uint32_t>(p[2]) << 16) |
           (static_cast<uint32_t>(p[3]) << 24);
}
uint64_t le64(const uint8_t* p) { return static_cast<uint64_t>(le32(p)) | (static_cast<uint64_t>(le32(p + 4)) << 32); }

// A memo slot whose value is pushed as it is (a string, a frame or a stack, kept in the slot
// itself); anything else goes through memoGet.
inline bool memoPushedAsIs(Tag tag, uint32_t ref) {
    return (tag == Tag::Str || tag >= Tag::Frame) && tag != Tag::Unset && ref != PackedMemo::kWide;
}

const char* refusedName(uint8_t op) {
    switch (op) {
    case 'c': return "GLOBAL";
    case 0x93: return "STACK_GLOBAL";
    case 'R': return "REDUCE";
    case 'b': return "BUILD";
    case 'i': return "INST";
    case 'o': return "OBJ";
    case 0x81: return "NEWOBJ";
    case 0x92: return "NEWOBJ_EX";
    case 0x82: return "EXT1";
    case 0x83: return "EXT2";
    case 0x84: return "EXT4";
    case 'P': return "PERSID";
    case 'Q': return "BINPERSID";
    case 0x97: return "NEXT_BUFFER";
    case 0x98: return "READONLY_BUFFER";
    default: return nullptr;
    }
}

std::string hexByte(uint8_t b) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "0x%02x", b);
    return buf;
}

void appendUtf8(std::string& out, uint32_t cp) {
    if (cp < 0x80) {
        out += static_cast<char>(cp);
    } else if (cp < 0x800) {
        out += static_cast<char>(0xC0 | (cp >> 6));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out += static_cast<char>(0xE0 | (cp >> 12));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
        out += static_cast<char>(0xF0 | (cp >> 18));
        out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    }
}

int hexDigit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

} // namespace

PickleMachine::PickleMachine(ByteReader& in, PickleDocument& doc, PickleHooks* hooks, PickleLimits limits)
    : in_(in), doc_(doc), hooks_(hooks), limits_(limits) {
    limits_.maxDepth = std::min<uint32_t>(limits_.maxDepth, 60000);  // node depths are 16-bit
    limits_.memoWideFrom = std::min(limits_.memoWideFrom, PackedMemo::kWide);
    // Address space for what a file of this size is likely to need; pages cost only when touched.
    // The memo: a slot per 8 bytes of file. torch 2.11's traces with Python stacks memoise a value
    // every 30 bytes (each entry's dict, its 'N/A', its empty frames list); a reservation of one
    // slot per 32 bytes made the memo grow by copying itself, hundreds of MB, at the end of the
    // read (tests/bench/README.md, "A torch 2.11 trace"). Sealed blocks of such slots take 1.25
    // bytes a slot (MemoSlots).
    memo_.reserve(static_cast<size_t>(std::min<uint64_t>(in.sizeHint() / 8 + 1024, uint64_t(1) << 28)));
    // one per container node: as many as the document reserves (SnapshotHooks)
    nodeMemo_.reserve(static_cast<size_t>(std::min<uint64_t>(in.sizeHint() / 24 + 64, uint64_t(1) << 28)));
    stack_.reserve(4096);
    if (hooks_ && limits_.wholeDicts && limits_.dictTemplates) {
        templates_ = std::make_unique<DictTemplates>();
        records_ = hooks_->planRecords();
    }
}

PickleMachine::~PickleMachine() = default;

void PickleMachine::forgetTemplates() {
    if (templates_) templates_->clear();
}

void PickleMachine::fail(const std::string& what) const { throw ParseError(opOffset_, what); }

void PickleMachine::stackFull() const {
    fail("more than " + std::to_string(limits_.maxStack) + " values on the pickle stack");
}

void PickleMachine::stackUnderflow() const { fail("pickle stack underflow (corrupt file)"); }

Value PickleMachine::pop() {
    size_t floor = marks_.empty() ? 0 : marks_.back();
    if (stack_.size() <= floor) stackUnderflow();
    Value v = stack_.back();
    stack_.pop_back();
    return v;
}

size_t PickleMachine::markBase() {
    if (marks_.empty()) fail("no MARK before this opcode (corrupt file)");
    size_t m = marks_.back();
    marks_.pop_back();
    return m;
}

uint32_t PickleMachine::makeNode(Tag kind) {
    uint32_t id = doc_.newNode(kind);
    if (id >= nodeMemo_.size()) nodeMemo_.resize(id + 1);
    nodeMemo_[id] = 0;
    return id;
}

void PickleMachine::collapsed(uint32_t id, Value c) {
    uint32_t m = nodeMemo_[id];
    if (m == 0 || m == kShared) return;
    const MemoSlot slot = slotAt(m - 1);
    if ((slot.tag == Tag::List || slot.tag == Tag::Dict) && slot.ref == id) memo_.set(m - 1, encodeAt(m - 1, c));
}

Value PickleMachine::store(Value v) {
    if (!v.isContainer()) return v;
    auto& nd = doc_.node(v.ref);
    if (nd.isCollapsed()) {
        Value c = nd.collapsedValue();
        if (nodeMemo_[v.ref] != kShared)
            doc_.recycle(v.ref);  // its memo slot holds c now: nothing refers to the node
        else
            nd.markUsed();
        return c;
    }
    if (!nd.used()) {
        nd.markUsed();
        if (hooks_) {
            Value c = hooks_->collapse(doc_, v);
            if (c.tag != v.tag || c.ref != v.ref) {
                doc_.node(v.ref).collapse(c);
                collapsed(v.ref, c);
                if (nodeMemo_[v.ref] != kShared) doc_.recycle(v.ref);
                return c;
            }
        }
        const auto& stored = doc_.node(v.ref);
        if (stored.kind == Tag::List && stored.count == 0 && !stored.isCollapsed() && nodeMemo_[v.ref] != kShared) {
            // an empty list referred to from here and at most its memo slot: the one empty list
            // stands for it (torch 2.11 writes a new `[]` for the frames of each entry without
            // any: millions of nodes otherwise). Changing it later is refused, as for any
            // container changed after it was used that is kept collapsed.
            const Value empty = emptyList();
            collapsed(v.ref, empty);
            doc_.recycle(v.ref);
            return empty;
        }
    }
    return v;
}

Value PickleMachine::emptyList() {
    if (emptyList_ == PickleDocument::kNone) {
        emptyList_ = makeNode(Tag::List);
        doc_.node(emptyList_).markUsed();
        nodeMemo_[emptyList_] = kShared;  // never recycled
    }
    return Value::node(Tag::List, emptyList_);
}

void PickleMachine::appendTo(Value container, size_t from, bool batch) {
    if (!container.isContainer()) fail(std::string("cannot add items to a ") + tagName(container.tag));
    auto id = container.ref;
    Tag kind = doc_.node(id).kind;
    size_t n = stack_.size() - from;
    if (kind == Tag::Tuple) fail("cannot add items to a tuple");
    if (id == emptyList_) fail("a container is changed after it was used (not supported)");
    if (kind == Tag::Dict && (n % 2) != 0) fail("odd number of items for a dict (corrupt file)");
    if (doc_.node(id).isCollapsed()) {
        auto& nd = doc_.node(id);
        if (nd.used() || kind != Tag::List) fail("a container is changed after it was used (not supported)");
        // a list absorbed by one APPENDS gets more items: expand it again
        std::vector<Value> items;
        hooks_->expandList(doc_, nd.collapsedValue(), items);
        nd.uncollapse();
        if (uint32_t m = nodeMemo_[id]; m != 0 && m != kShared && PackedMemo::tag(memo_.get(m - 1)) == Tag::Stack) {
            memo_.set(m - 1, encodeAt(m - 1, Value::node(Tag::List, id)));  // the memo refers to the list again
            forgetTemplates();
        }
        doc_.append(id, items.data(), items.size());
    }
    uint32_t depth = doc_.node(id).depth;
    Value* items = stack_.data() + from;
    for (size_t i = 0; i < n; ++i) {
        Value& v = items[i];
        if (!v.isContainer()) continue;
        if (v.ref == id) fail("a container is put into itself (cyclic data is refused)");
        v.assign(store(v));
        if (v.isContainer()) depth = std::max<uint32_t>(depth, doc_.node(v.ref).depth + 1u);
    }
    if (depth > limits_.maxDepth)
        fail("containers nested deeper than " + std::to_string(limits_.maxDepth) + " levels");
    auto& nd = doc_.node(id);
    if (batch && hooks_ && nd.count == 0 && !nd.used()) {
        Value out;
        bool absorbed = kind == Tag::Dict   ? hooks_->absorbDict(doc_, items, n, out)
                        : kind == Tag::List ? hooks_->absorbList(doc_, items, n, out)
                                            : false;
        if (absorbed) {
            doc_.node(id).collapse(out);
            collapsed(id, out);
            stack_.resize(from);
            return;
        }
    }
    doc_.node(id).depth = static_cast<uint16_t>(depth);
    doc_.append(id, items, n);
    stack_.resize(from);
}

Value PickleMachine::makeTuple(size_t from) {
    auto id = makeNode(Tag::Tuple);
    uint32_t depth = 1;
    for (size_t i = from; i < stack_.size(); ++i) {
        stack_[i].assign(store(stack_[i]));
        if (stack_[i].isContainer()) depth = std::max<uint32_t>(depth, doc_.node(stack_[i].ref).depth + 1u);
    }
    if (depth > limits_.maxDepth)
        fail("containers nested deeper than " + std::to_string(limits_.maxDepth) + " levels");
    doc_.node(id).depth = static_cast<uint16_t>(depth);
    doc_.append(id, stack_.data() + from, stack_.size() - from);
    stack_.resize(from);
    return Value::node(Tag::Tuple, id);
}

void PickleMachine::memoPut(uint64_t index, Value v) {
    v = resolve(v);
    if (v.isContainer()) {
        uint32_t& m = nodeMemo_[v.ref];
        bool dense = index <= memo_.size() + 65536;
        m = (m == 0 && dense && index < kShared - 1) ? static_cast<uint32_t>(index + 1) : kShared;
    }
    if (index == memo_.size()) {
        memo_.push_back(encodeAt(index, v));
        memoPushed();
    } else if (index < memo_.size()) {
        if (hooks_) hooks_->memoRewritten(index, decode(slotAt(index)));
        forgetTemplates();
        memo_.set(index, encodeAt(index, v));
    } else if (index <= memo_.size() + 65536) {
        memo_.grow(index);  // zeroed slots are unset
        memo_.push_back(encodeAt(index, v));
        memoPushed();
    } else {
        if (sparseMemo_.size() >= limits_.maxSparseMemo && !sparseMemo_.count(index))
            fail("too many memo entries with scattered indices");
        sparseMemo_[index] = v;
    }
}

Value PickleMachine::memoGet(uint64_t index) {
    if (index < memo_.size() && PackedMemo::tag(memo_.read(index)) != Tag::Unset) {
        Value v = decode(slotAt(index));
        if (v.isContainer()) {
            v = resolve(v);
            if (!v.isContainer())
                memo_.set(index, encodeAt(index, v));  // later gets skip the node
            else
                markShared(v);
        }
        return v;
    }
    auto it = sparseMemo_.find(index);
    if (it == sparseMemo_.end()) fail("memo entry " + std::to_string(index) + " is read before it was stored");
    Value v = resolve(it->second);
    markShared(v);
    return v;
}

static_assert(std::endian::native == std::endian::little, "the integer decoding assumes a little-endian host");

Value PickleMachine::readLong(const uint8_t* p, uint64_t n) {
    if (n == 0) return Value::integer(0);
    if (n <= 8) {  // the common case: two's complement in up to 8 bytes
        uint64_t v = 0;
        std::memcpy(&v, p, static_cast<size_t>(n));  // little-endian host
        unsigned shift = static_cast<unsigned>(64 - 8 * n);
        return Value::integer(static_cast<int64_t>(v << shift) >> shift);
    }
    bool negative = (p[n - 1] & 0x80) != 0;
    uint8_t ext = negative ? 0xFF : 0x00;
    // bytes beyond the 8th must be pure sign extension; a 9th byte 0x00 makes room for values of
    // 2^63..2^64-1 (torch writes (size_t)-1 as a 9-byte LONG1)
    for (uint64_t i = 8; i < n; ++i)
        if (p[i] != ext) fail("integer wider than 64 bits (" + std::to_string(n) + "-byte LONG)");
    uint64_t v = 0;
    std::memcpy(&v, p, 8);
    if (negative) {
        if (!(v >> 63)) fail("integer wider than 64 bits (below -2^63)");
        return Value::integer(static_cast<int64_t>(v));
    }
    return Value::uinteger(v);
}

std::string PickleMachine::readLine() {
    std::string s;
    for (;;) {
        uint8_t c = in_.byte();
        if (c == '\n') break;
        s += static_cast<char>(c);
    }
    if (!s.empty() && s.back() == '\r') s.pop_back();
    return s;
}

Value PickleMachine::parseDecimal(const std::string& text, bool allowBoolForm) {
    if (allowBoolForm) {
        if (text == "00") return Value::boolean(false);
        if (text == "01") return Value::boolean(true);
    }
    std::string t = text;
    if (!t.empty() && t.back() == 'L') t.pop_back();
    const char* b = t.data();
    const char* e = t.data() + t.size();
    bool neg = b != e && *b == '-';
    if (b != e && (*b == '+' || *b == '-')) ++b;
    if (b == e) fail("empty integer in text opcode");
    uint64_t mag = 0;
    auto r = std::from_chars(b, e, mag);
    if (r.ec == std::errc::result_out_of_range) fail("integer wider than 64 bits: " + text.substr(0, 40));
    if (r.ec != std::errc() || r.ptr != e) fail("bad integer in text opcode: '" + text.substr(0, 40) + "'");
    if (!neg) return Value::uinteger(mag);
    if (mag > (uint64_t(1) << 63)) fail("integer wider than 64 bits: " + text.substr(0, 40));
    return Value::integer(static_cast<int64_t>(0 - mag));
}

Value PickleMachine::makeString(const uint8_t* p, uint64_t n, bool bytes) {
    auto id = doc_.strings.intern(std::string_view(reinterpret_cast<const char*>(p), static_cast<size_t>(n)));
    return bytes ? Value::bytes(id) : Value::str(id);
}

// A list made only of memo gets (in a snapshot: a frames list, the bulk of the file): a run of
// BINGET and LONG_BINGET closed by APPENDS. Returns the bytes of the one at p (APPENDS included)
// within avail, or 0.
size_t PickleMachine::measureMemoGetRun(const uint8_t* p, size_t avail) {
    avail = std::min<size_t>(avail, 8192);  // longer lists take the general path
    size_t pos = 0;
    for (;;) {
        if (pos + 2 <= avail && p[pos] == 'h')
            pos += 2;
        else if (pos + 5 <= avail && p[pos] == 'j')
            pos += 5;
        else
            break;
    }
    return pos > 0 && pos < avail && p[pos] == 'e' ? pos + 1 : 0;
}

// A run of memo gets (a frames list's items) at p, recalled or absorbed whole by the hooks, from
// the avail bytes; returns the bytes it took (none: anything else is left to run()).
inline size_t PickleMachine::memoRunAt(const uint8_t* p, size_t avail, Value& out) {
    if (const size_t len = hooks_->recallMemoRun(doc_, p, avail, out)) return len;
    const size_t len = measureMemoGetRun(p, avail);
    if (!len || !hooks_->absorbMemoRun(doc_, MemoGetRun({p, len}, memo_, wideRefs_), out)) return 0;
    return len;
}

// After MARK on an empty list: a list of memo gets offered whole to the hooks.
inline size_t PickleMachine::memoGetRun(const uint8_t* p, size_t avail) {
    uint32_t id = stack_.back().ref;
    const auto& nd = doc_.node(id);
    if (nd.count != 0 || nd.used() || nd.isCollapsed()) return 0;
    Value out;
    const size_t len = memoRunAt(p, avail, out);
    if (!len) return 0;
    marks_.pop_back();
    doc_.node(id).collapse(out);
    collapsed(id, out);
    return len;
}

namespace {
// The operands that run()'s labels and wholeDict both read, decoded here once. Each reads the
// bytes right after its opcode, all of them buffered: run() makes sure of them first (NEED refills
// the buffer, or throws at the end of the file), wholeDict checks them against what is left of its
// buffer and leaves the dict to run() where they are not all there.

// BININT1, BININT2, BININT, BINGET, LONG_BINGET: how many bytes follow the opcode. Each caller
// names its opcode, so that nothing is decided at run time (a branch on the opcode in the memo
// gets cost 1.4 % more instructions on the real trace).
template <uint8_t Op>
constexpr size_t kOperandBytes = Op == 'K' || Op == 'h' ? 1 : Op == 'M' ? 2 : 4;
// BININT1, BININT2, BININT: the value
template <uint8_t Op>
[[gnu::always_inline]] inline Value intAt(const uint8_t* p) {
    static_assert(Op == 'K' || Op == 'M' || Op == 'J');
    if constexpr (Op == 'K') return Value::integer(*p);
    else if constexpr (Op == 'M') return Value::integer(le16(p));
    else return Value::integer(static_cast<int32_t>(le32(p)));
}
// BINGET, LONG_BINGET: the memo index
template <uint8_t Op>
[[gnu::always_inline]] inline uint64_t memoIndexAt(const uint8_t* p) {
    static_assert(Op == 'h' || Op == 'j');
    if constexpr (Op == 'h') return *p;
    else return le32(p);
}

// LONG1 of 1 to 8 bytes (addresses, times) in one 8-byte load, where shortLongFits: its length
// byte N (1 to 8) and at least 8 bytes buffered from its first. Other lengths are readLong's.
[[gnu::always_inline]] inline bool shortLongFits(unsigned n, size_t buffered) { return n - 1u < 8u && buffered >= 8; }
Value shortLong(const uint8_t* p, unsigned n) {
    uint64_t v;
    std::memcpy(&v, p, 8);  // little-endian host
    unsigned shift = 64 - 8 * n;
    return Value::integer(static_cast<int64_t>(v << shift) >> shift);
}
} // namespace

// Memo slot idx (set: below memo_.size()) into v where a get pushes what it holds as it is (a
// string, a frame, a stack, a row...); false where it needs memoGet.
[[gnu::always_inline]] inline bool PickleMachine::slotAsIs(uint64_t idx, Value& v) {
    const uint32_t packed = memo_.read(idx);
    const Tag tag = PackedMemo::tag(packed);
    const uint32_t ref = PackedMemo::ref(packed);
    if (!memoPushedAsIs(tag, ref)) return false;
    v.assign(Value{0, ref, tag});
    return true;
}

size_t PickleMachine::wholeDict(const uint8_t* p, size_t avail) {
    if (avail < 4 || p[1] != 0x94 || p[2] != '(' || limits_.maxDepth < 2) return 0;
    const uint64_t memoBase = memo_.size();
    if (memoBase + kWholeDictItems + 1 >= kShared - 1) return 0;
    const bool templated = templates_ && templates_->active();
    if (templated)
        if (const size_t taken = replayDict(p, avail)) return taken;
    Value* items = wholeItems_.get();
    Value* puts = wholePuts_.get();  // the values MEMOIZE gives slots, in order; [0]: the dict's
    DictTemplates::Hole holes[kWholeDictItems];  // its numbers, for its template
    size_t n = 0, putCount = 1, holeCount = 0;
    bool framed = false;  // a FRAME opcode inside: not the bytes of any other dict
    bool unlearnable = false;  // a list got from the memo: no template
    size_t pos = 3;
    for (;;) {
        if (pos >= avail) return 0;
        const uint8_t op = p[pos++];
        if (n == kWholeDictItems || putCount > kWholeDictItems) return 0;
        // written field by field (assign): a Value chosen in one branch of many otherwise goes
        // through the stack frame, copied as overlapping words that stall
        Value& v = items[n];
        uint64_t idx;
        switch (op) {
        case 'u':
            goto setitems;
        case 'h':
            if (pos + kOperandBytes<'h'> > avail) return 0;
            idx = memoIndexAt<'h'>(p + pos);
            pos += kOperandBytes<'h'>;
            goto get;
        case 'j':
            if (pos + kOperandBytes<'j'> > avail) return 0;
            idx = memoIndexAt<'j'>(p + pos);
            pos += kOperandBytes<'j'>;
        get: {
            // a slot of this dict's own is not set yet: left to run()
            if (idx >= memoBase) return 0;
            if (!slotAsIs(idx, v)) {
                // a list got again (blocks sharing one frames list): as the stack's path gets it
                // (marked shared); the dict is then no template's (a list may be collapsed later)
                if (PackedMemo::tag(memo_.read(idx)) != Tag::List) return 0;
                v.assign(memoGet(idx));
                unlearnable = true;
                break;
            }
            // a frames list shared with an entry before (free_completed's is its free_requested's):
            // a slot of its own each time, so the template reads the get
            if (v.tag == Tag::Stack) {
                const size_t at = pos - 1 - (op == 'h' ? kOperandBytes<'h'> : kOperandBytes<'j'>);
                holes[holeCount++] = {static_cast<uint16_t>(at), static_cast<uint8_t>(n), op};
            }
            break;
        }
#define MEMLENS_WHOLE_INT(OP)                                                                     \
    case OP:                                                                                      \
        if (pos + kOperandBytes<OP> > avail) return 0;                                            \
        v.assign(intAt<OP>(p + pos));                                                             \
        holes[holeCount++] = {static_cast<uint16_t>(pos - 1), static_cast<uint8_t>(n), OP};       \
        pos += kOperandBytes<OP>;                                                                 \
        break;
            MEMLENS_WHOLE_INT('K')
            MEMLENS_WHOLE_INT('M')
            MEMLENS_WHOLE_INT('J')
#undef MEMLENS_WHOLE_INT
        case 0x8a: {  // LONG1 of 1 to 8 bytes
            if (pos + 1 > avail) return 0;
            const uint8_t len = p[pos++];
            if (!shortLongFits(len, avail - pos)) return 0;
            v.assign(shortLong(p + pos, len));
            holes[holeCount++] = {static_cast<uint16_t>(pos - 2), static_cast<uint8_t>(n), 0x8a};
            pos += len;
            break;
        }
        case 'N':
            v.assign(Value::none());
            break;
        case 0x88:
        case 0x89:
            v.assign(Value::boolean(op == 0x88));
            break;
        case 0x8c: {  // SHORT_BINUNICODE, memoised or not
            if (pos + 1 > avail) return 0;
            const uint8_t len = p[pos++];
            if (pos + len > avail) return 0;
            v.assign(makeString(p + pos, len, false));
            pos += len;
            if (pos < avail && p[pos] == 0x94) {
                ++pos;
                puts[putCount++].assign(v);
            }
            break;
        }
        case ']': {  // a memoised list: empty, or memo gets of frames closed by APPENDS
            if (pos >= avail || p[pos] != 0x94) return 0;
            ++pos;
            if (pos < avail && p[pos] == '(') {
                Value stack;
                const size_t len = memoRunAt(p + pos + 1, avail - pos - 1, stack);
                if (!len) return 0;
                v.assign(stack);
                pos += 1 + len;
            } else {
                v.assign(emptyList());  // what store() makes of an empty list
            }
            puts[putCount++].assign(v);
            break;
        }
        case 0x95:  // FRAME, advisory
            if (pos + 8 > avail) return 0;
            pos += 8;
            framed = true;
            continue;
        default:
            return 0;
        }
        ++n;
    }
setitems:
    if (n < 4 || n % 2 != 0) return 0;
    {
        Value out;
        if (!hooks_->absorbDict(doc_, items, n, out)) return 0;
        // the slots as run() leaves them: the dict's holds what it was absorbed into, a list's
        // the stack (or the empty list), a string's the string
        puts[0].assign(out);
        for (size_t i = 0; i < putCount; ++i) memoPut(memo_.size(), puts[i]);
        push(out);
        if (templated) {
            // the puts as memoAppend packs them, where it packs each as it is
            uint32_t packed[kWholeDictItems];
            bool packable = true;
            for (size_t i = 1; i < putCount && packable; ++i) {
                packable = packsAsIs(puts[i]);
                packed[i - 1] = PackedMemo::pack(puts[i].tag, puts[i].ref);
            }
            const uint32_t learnt =
                templates_->read(p, pos, holes, holeCount, items, n, puts + 1, packable ? packed : nullptr, putCount - 1,
                                 !framed && !unlearnable && (out.tag == Tag::Row || out.tag == Tag::Block));
            if (learnt != DictTemplates::kNone && holeCount <= PickleHooks::kMaxPlannedHoles && records_.queue) {
                uint8_t holeItems[kWholeDictItems];
                for (size_t i = 0; i < holeCount; ++i) holeItems[i] = holes[i].item;
                uint16_t refusedNegative = 0;
                const int32_t plan = hooks_->planDict(items, n, holeItems, holeCount, refusedNegative);
                templates_->setPlan(learnt, plan, refusedNegative);
            }
        }
    }
    ++wholeDictsRead_;
    return pos;
}

size_t PickleMachine::replayDict(const uint8_t* p, size_t avail) {
    uint32_t t = DictTemplates::kNone;
    size_t length = 0;
    for (int way = 0; way < DictTemplates::kWays && !length; ++way) {
        t = templates_->predicted(way);
        if (t != DictTemplates::kNone) length = templates_->match(t, p, avail);
    }
    if (!length) return 0;
    const size_t h = templates_->holeCount(t);
    // where the hooks have a plan for the template's dicts: the numbers at the holes, and the
    // stacks of its memo gets, straight from the bytes into the hooks' queue (planRecords()); the
    // numbers may be what the plan refuses (a negative size): the record is then left
    // uncommitted and the dict read as before
    if (const int32_t plan = templates_->plan(t); plan >= 0) {
        uint64_t* record = records_.queue->reserve(1 + PickleHooks::kMaxPlannedHoles);  // planDict was asked for no more
        record[0] = static_cast<uint64_t>(plan) << 1 | 1;
        const DictTemplates::Operand* operands = templates_->operands(t);
        uint64_t negative = 0;  // bit i: hole i is negative
        for (size_t i = 0; i < h; ++i) {
            const DictTemplates::Operand o = operands[i];
            uint64_t w;
            std::memcpy(&w, p + o.at, 8);  // match() made sure of 8 bytes past the template
            w <<= o.shift;
            uint64_t value;
            if (o.kind == DictTemplates::Operand::Unsigned) {
                value = w >> o.shift;
            } else if (o.kind == DictTemplates::Operand::Signed) {
                value = static_cast<uint64_t>(static_cast<int64_t>(w) >> o.shift);
            } else {  // BINGET, LONG_BINGET of a frames list: what wholeDict takes
                const uint64_t idx = w >> o.shift;
                Value v;
                if (idx >= memo_.size() || !slotAsIs(idx, v) || v.tag != Tag::Stack) return 0;
                value = v.ref;
            }
            record[1 + i] = value;
            negative |= (value >> 63) << i;
        }
        if (negative & templates_->refusedNegative(t)) return 0;
        records_.queue->commit(1 + h);
        return replayed(t, Value::node(records_.tag, static_cast<uint32_t>((*records_.numbered)++)), length);
    }
    // the values at the holes, into the template's own items
    Value* items = templates_->items(t);
    const size_t n = templates_->itemCount(t);
    const DictTemplates::Hole* holes = templates_->holes(t);
    for (size_t i = 0; i < h; ++i) {
        const uint8_t* q = p + holes[i].at + 1;  // match() made sure of 8 bytes past the opcode
        Value& v = items[holes[i].item];
        switch (holes[i].op) {
        case 'K': v.assign(intAt<'K'>(q)); break;
        case 'M': v.assign(intAt<'M'>(q)); break;
        case 'J': v.assign(intAt<'J'>(q)); break;
        case 0x8a: v.assign(shortLong(q + 1, *q)); break;  // LONG1 of 1 to 8 bytes
        default: {  // BINGET, LONG_BINGET: what wholeDict takes
            const uint64_t idx = holes[i].op == 'h' ? memoIndexAt<'h'>(q) : memoIndexAt<'j'>(q);
            if (idx >= memo_.size() || !slotAsIs(idx, v)) return 0;
            break;
        }
        }
    }
    Value out;
    if (!hooks_->absorbDict(doc_, items, n, out)) return 0;
    return replayed(t, Value{out.bits, out.ref, out.tag}, length);  // field by field (Value::assign)
}

size_t PickleMachine::replayed(uint32_t t, Value out, size_t length) {
    const size_t m = templates_->putCount(t);
    if (const uint32_t* packed = templates_->packedPuts(t); packed && packsAsIs(out) && wideRefs_.empty()) [[likely]] {
        // what memoAppend does, the puts packed when the template was learnt
        memo_.push_back(PackedMemo::pack(out.tag, out.ref));
        for (size_t i = 0; i < m; ++i) memo_.push_back(packed[i]);
        memoPushed();
    } else {
        memoAppend(out);
        const Value* puts = templates_->puts(t);
        for (size_t i = 0; i < m; ++i) memoAppend(puts[i]);
    }
    push(out);
    templates_->replayed(t);
    ++wholeDictsRead_;
    ++dictsReplayed_;
    return length;
}

// The opcodes that make up nearly all of a snapshot are dispatched through a table of labels,
// each ending in its own jump to the next opcode (threaded code: the processor predicts each of
// those jumps separately); everything else goes through the switch. The labels read through a
// cursor of their own, p up to end, kept in registers; in_ is brought up to date (SYNC) before
// anything else reads from it and the cursor reloaded (LOAD) after. The offset of byte q is
// bias + q.
#define MEMLENS_SYNC() in_.skip(static_cast<size_t>(p - in_.cursor()))
#define MEMLENS_LOAD()                                                                            \
    do {                                                                                          \
        p = in_.cursor();                                                                         \
        end = p + in_.buffered();                                                                 \
        bias = in_.offset() - reinterpret_cast<uintptr_t>(p);                                     \
    } while (0)
#define MEMLENS_NEED(n)                                                                           \
    do {                                                                                          \
        if (static_cast<size_t>(end - p) < (n)) [[unlikely]] {                                    \
            MEMLENS_SYNC();                                                                       \
            in_.ensure(n); /* at the end of the file this throws: truncated */                    \
            MEMLENS_LOAD();                                                                       \
        }                                                                                         \
    } while (0)
#define MEMLENS_NEXT_OPCODE()                                                                     \
    do {                                                                                          \
        if (++tick >= 65536) [[unlikely]] {                                                       \
            tick = 0;                                                                             \
            if (cancel && cancel->load(std::memory_order_relaxed)) throw Cancelled();             \
            MEMLENS_SYNC();                                                                       \
            if (progress) progress(in_.progressPosition(), in_.progressTotal());                                     \
        }                                                                                         \
        MEMLENS_NEED(1); /* no STOP before the end of the file */                                 \
        opOffset_ = bias + reinterpret_cast<uintptr_t>(p);                                        \
        op = *p++;                                                                                \
        goto* table[op];                                                                          \
    } while (0)

Value PickleMachine::run(const Progress& progress, const std::atomic<bool>* cancel) {
    void* table[256];
    for (auto& t : table) t = &&general;
    table['h'] = table['j'] = &&memo_get;
    table[0x94] = &&memoize;
    table['q'] = &&binput;
    table['('] = &&mark;
    table['}'] = &&empty_dict;
    table[']'] = &&empty_list;
    table['u'] = &&setitems;
    table['K'] = &&binint1;
    table['M'] = &&binint2;
    table['J'] = &&binint;
    table[0x8a] = &&long1;
    table[0x8c] = &&short_binunicode;
    uint32_t tick = 0;
    uint8_t op = 0;
    const uint8_t* p;
    const uint8_t* end;
    uint64_t bias;
    MEMLENS_LOAD();
    MEMLENS_NEXT_OPCODE();

memo_get: {
    uint64_t idx;
    if (op == 'h') {
        MEMLENS_NEED(kOperandBytes<'h'>);
        idx = memoIndexAt<'h'>(p);
        p += kOperandBytes<'h'>;
    } else {
        MEMLENS_NEED(kOperandBytes<'j'>);
        idx = memoIndexAt<'j'>(p);
        p += kOperandBytes<'j'>;
    }
    if (idx < memo_.size()) {
        const uint32_t packed = memo_.read(idx);
        const Tag tag = PackedMemo::tag(packed);
        const uint32_t ref = PackedMemo::ref(packed);
        if (memoPushedAsIs(tag, ref)) {
            push(Value{0, ref, tag});  // the common case: a string, a frame or a stack
            MEMLENS_NEXT_OPCODE();
        }
    }
    push(memoGet(idx));
    MEMLENS_NEXT_OPCODE();
}
memoize: {
    // the common case inline: the container just made by EMPTY_DICT or EMPTY_LIST takes the next
    // slot, the only one that refers to it
    const Value& v = top();
    if (v.isContainer() && nodeMemo_[v.ref] == 0 && !doc_.node(v.ref).isCollapsed() && memo_.size() < kShared - 1) {
        memo_.push_back(encodeAt(memo_.size(), v));
        nodeMemo_[v.ref] = static_cast<uint32_t>(memo_.size());
        memoPushed();
    } else {
        memoPut(memo_.size(), v);
    }
    MEMLENS_NEXT_OPCODE();
}
binput:
    MEMLENS_NEED(1);
    memoPut(*p++, top());
    MEMLENS_NEXT_OPCODE();
mark:
    if (marks_.size() >= limits_.maxMarks) fail("more than " + std::to_string(limits_.maxMarks) + " open MARKs");
    marks_.push_back(stack_.size());
    if (hooks_ && !stack_.empty() && stack_.back().tag == Tag::List) p += memoGetRun(p, static_cast<size_t>(end - p));
    MEMLENS_NEXT_OPCODE();
empty_dict:
    if (hooks_ && limits_.wholeDicts) {
        if (const size_t taken = wholeDict(p - 1, static_cast<size_t>(end - (p - 1)))) {
            p += taken - 1;
            tick += static_cast<uint32_t>(taken >> 2);  // about the opcodes it stood for: progress and cancel keep their pace
            MEMLENS_NEXT_OPCODE();
        }
    }
    push(Value::node(Tag::Dict, makeNode(Tag::Dict)));
    MEMLENS_NEXT_OPCODE();
empty_list:
    push(Value::node(Tag::List, makeNode(Tag::List)));
    MEMLENS_NEXT_OPCODE();
setitems: {
    size_t base = markBase();
    if (base == 0 || (!marks_.empty() && base <= marks_.back())) fail("pickle stack underflow (corrupt file)");
    Value dict = stack_[base - 1];
    if (dict.tag != Tag::Dict) fail(std::string("SETITEMS on a ") + tagName(dict.tag));
    appendTo(dict, base, true);
    MEMLENS_NEXT_OPCODE();
}
#define MEMLENS_RUN_INT(OP)                                                                       \
    MEMLENS_NEED(kOperandBytes<OP>);                                                              \
    push(intAt<OP>(p));                                                                           \
    p += kOperandBytes<OP>;                                                                       \
    MEMLENS_NEXT_OPCODE();
binint1:
    MEMLENS_RUN_INT('K')
binint2:
    MEMLENS_RUN_INT('M')
binint:
    MEMLENS_RUN_INT('J')
#undef MEMLENS_RUN_INT
long1: {
    MEMLENS_NEED(1);
    uint8_t n = *p++;
    MEMLENS_NEED(n);
    push(shortLongFits(n, static_cast<size_t>(end - p)) ? shortLong(p, n) : readLong(p, n));
    p += n;
    MEMLENS_NEXT_OPCODE();
}
short_binunicode: {
    MEMLENS_NEED(1);
    uint8_t n = *p++;
    MEMLENS_NEED(n);
    push(makeString(p, n, false));
    p += n;
    MEMLENS_NEXT_OPCODE();
}

general:
    MEMLENS_SYNC();
    {
        switch (op) {
        // --- control
        case 0x80: {  // PROTO
            protocol_ = in_.byte();
            if (protocol_ > 5) fail("pickle protocol " + std::to_string(protocol_) + " is newer than 5");
            break;
        }
        case 0x95:  // FRAME: advisory length
            in_.take(8);
            break;
        case '.': {  // STOP
            Value v = pop();
            if (v.isContainer()) v = store(v);
            return v;
        }
        case '0':  // POP
            if (!marks_.empty() && stack_.size() == marks_.back())
                marks_.pop_back();
            else
                pop();
            break;
        case '1':  // POP_MARK
            stack_.resize(markBase());
            break;
        case '2':  // DUP
            markShared(top());
            push(top());
            break;
        // --- scalars
        case 'N': push(Value::none()); break;
        case 0x88: push(Value::boolean(true)); break;
        case 0x89: push(Value::boolean(false)); break;
        case 0x8b: {  // LONG4
            uint32_t n = le32(in_.take(4));
            if (n > in_.remaining()) fail("LONG4 length " + std::to_string(n) + " is longer than the rest of the file");
            push(readLong(in_.take(n), n));
            break;
        }
        case 'G': {  // BINFLOAT, big-endian
            const uint8_t* p = in_.take(8);
            uint64_t bits = 0;
            for (int i = 0; i < 8; ++i) bits = (bits << 8) | p[i];
            push(Value::real(std::bit_cast<double>(bits)));
            break;
        }
        case 'I': push(parseDecimal(readLine(), true)); break;
        case 'L': push(parseDecimal(readLine(), false)); break;
        case 'F': {
            std::string t = readLine();
            char* end = nullptr;
            double d = std::strtod(t.c_str(), &end);
            if (t.empty() || end != t.c_str() + t.size()) fail("bad float in FLOAT opcode");
            push(Value::real(d));
            break;
        }
        // --- strings and bytes
        case 'X':
        case 0x8d:
        case 'T':
        case 'B':
        case 0x8e:
        case 0x96: {  // BINUNICODE, BINUNICODE8, BINSTRING, BINBYTES, BINBYTES8, BYTEARRAY8
            bool wide = op == 0x8d || op == 0x8e || op == 0x96;
            uint64_t n = wide ? le64(in_.take(8)) : le32(in_.take(4));
            if (op == 'T' && (n >> 31)) fail("negative BINSTRING length");
            if (n > in_.remaining())
                fail("string length " + std::to_string(n) + " is longer than the rest of the file (" +
                     std::to_string(in_.remaining()) + " bytes)");
            push(makeString(in_.take(n), n, op == 'B' || op == 0x8e || op == 0x96));
            break;
        }
        case 'U':
        case 'C': {  // SHORT_BINSTRING, SHORT_BINBYTES
            uint8_t n = in_.byte();
            push(makeString(in_.take(n), n, op == 'C'));
            break;
        }
        case 'V': {  // UNICODE: raw-unicode-escape text
            std::string raw = readLine();
            std::string out;
            for (size_t i = 0; i < raw.size(); ++i) {
                auto c = static_cast<unsigned char>(raw[i]);
                if (c == '\\' && i + 1 < raw.size() && (raw[i + 1] == 'u' || raw[i + 1] == 'U')) {
                    size_t digits = raw[i + 1] == 'u' ? 4 : 8;
                    if (i + 2 + digits > raw.size()) fail("bad \\u escape in UNICODE opcode");
                    uint32_t cp = 0;
                    for (size_t k = 0; k < digits; ++k) {
                        int h = hexDigit(raw[i + 2 + k]);
                        if (h < 0) fail("bad \\u escape in UNICODE opcode");
                        cp = cp * 16 + static_cast<uint32_t>(h);
                    }
                    if (cp > 0x10FFFF) fail("code point out of range in UNICODE opcode");
                    appendUtf8(out, cp);
                    i += 1 + digits;
                } else {
                    appendUtf8(out, c);  // latin-1
                }
            }
            push(makeString(reinterpret_cast<const uint8_t*>(out.data()), out.size(), false));
            break;
        }
        case 'S': {  // STRING: a quoted Python 2 str repr
            std::string raw = readLine();
            if (raw.size() < 2 || raw.front() != raw.back() || (raw.front() != '\'' && raw.front() != '"'))
                fail("STRING opcode argument is not quoted");
            std::string out;
            for (size_t i = 1; i + 1 < raw.size(); ++i) {
                char c = raw[i];
                if (c != '\\') {
                    out += c;
                    continue;
                }
                if (i + 2 >= raw.size()) fail("bad escape in STRING opcode");
                char e = raw[++i];
                switch (e) {
                case 'n': out += '\n'; break;
                case 't': out += '\t'; break;
                case 'r': out += '\r'; break;
                case '\\': out += '\\'; break;
                case '\'': out += '\''; break;
                case '"': out += '"'; break;
                case 'x': {
                    if (i + 2 >= raw.size()) fail("bad \\x escape in STRING opcode");
                    int h1 = hexDigit(raw[i + 1]), h2 = hexDigit(raw[i + 2]);
                    if (h1 < 0 || h2 < 0) fail("bad \\x escape in STRING opcode");
                    out += static_cast<char>(h1 * 16 + h2);
                    i += 2;
                    break;
                }
                default:
                    if (e >= '0' && e <= '7') {
                        int v = e - '0';
                        for (int k = 0; k < 2 && i + 1 + 1 < raw.size() && raw[i + 1] >= '0' && raw[i + 1] <= '7'; ++k)
                            v = v * 8 + (raw[++i] - '0');
                        out += static_cast<char>(v & 0xFF);
                    } else {
                        out += '\\';
                        out += e;
                    }
                }
            }
            push(makeString(reinterpret_cast<const uint8_t*>(out.data()), out.size(), false));
            break;
        }
        // --- containers
        case 0x8f: push(Value::node(Tag::Set, makeNode(Tag::Set))); break;
        case ')': push(Value::node(Tag::Tuple, makeNode(Tag::Tuple))); break;
        case 'd':
        case 'l': {  // DICT, LIST from the items above the last MARK
            size_t base = markBase();
            Tag t = op == 'd' ? Tag::Dict : Tag::List;
            Value c = Value::node(t, makeNode(t));
            appendTo(c, base);
            push(c);
            break;
        }
        case 't': {  // TUPLE
            size_t base = markBase();
            push(makeTuple(base));
            break;
        }
        case 0x85:
        case 0x86:
        case 0x87: {  // TUPLE1..3
            size_t n = op - 0x84u;
            size_t floor = marks_.empty() ? 0 : marks_.back();
            if (stack_.size() < floor + n) fail("pickle stack underflow (corrupt file)");
            push(makeTuple(stack_.size() - n));
            break;
        }
        case 0x91: {  // FROZENSET
            size_t base = markBase();
            Value c = Value::node(Tag::Set, makeNode(Tag::Set));
            appendTo(c, base);
            push(c);
            break;
        }
        case 'a': {  // APPEND
            size_t floor = marks_.empty() ? 0 : marks_.back();
            if (stack_.size() < floor + 2) fail("pickle stack underflow (corrupt file)");
            Value list = stack_[stack_.size() - 2];
            if (list.tag != Tag::List) fail(std::string("APPEND to a ") + tagName(list.tag));
            appendTo(list, stack_.size() - 1);
            break;
        }
        case 'e':
        case 0x90: {  // APPENDS, ADDITEMS
            size_t base = markBase();
            if (base == 0 || (!marks_.empty() && base <= marks_.back())) fail("pickle stack underflow (corrupt file)");
            Value target = stack_[base - 1];
            Tag want = op == 'e' ? Tag::List : Tag::Set;
            if (target.tag != want)
                fail(std::string(op == 'e' ? "APPENDS" : "ADDITEMS") + " to a " + tagName(target.tag));
            appendTo(target, base, op == 'e');
            break;
        }
        case 's': {  // SETITEM
            size_t floor = marks_.empty() ? 0 : marks_.back();
            if (stack_.size() < floor + 3) fail("pickle stack underflow (corrupt file)");
            Value dict = stack_[stack_.size() - 3];
            if (dict.tag != Tag::Dict) fail(std::string("SETITEM on a ") + tagName(dict.tag));
            appendTo(dict, stack_.size() - 2);
            break;
        }
        // --- memo
        case 'r': memoPut(le32(in_.take(4)), top()); break;
        case 'p': {
            Value idx = parseDecimal(readLine(), false);
            if (idx.tag != Tag::Int || idx.asInt() < 0) fail("bad PUT index");
            memoPut(static_cast<uint64_t>(idx.asInt()), top());
            break;
        }
        case 'g': {
            Value idx = parseDecimal(readLine(), false);
            if (idx.tag != Tag::Int || idx.asInt() < 0) fail("bad GET index");
            push(memoGet(static_cast<uint64_t>(idx.asInt())));
            break;
        }
        default: {
            if (const char* name = refusedName(op))
                fail(std::string("opcode ") + name + " (" + hexByte(op) +
                     ") would import or call code; memlens reads data only and never executes anything from a file");
            fail("unknown pickle opcode " + hexByte(op) + " (corrupt file, or not a pickle)");
        }
        }
    }
    MEMLENS_LOAD();
    MEMLENS_NEXT_OPCODE();
}

#undef MEMLENS_NEXT_OPCODE
#undef MEMLENS_NEED
#undef MEMLENS_LOAD
#undef MEMLENS_SYNC

} // namespace memlens::model
