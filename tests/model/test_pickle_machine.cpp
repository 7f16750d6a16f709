// The pickle machine on hand-written opcodes: every data opcode, every refused opcode, limits.
#include "PickleWriter.h"

#include "memlens/model/ByteReader.h"
#include "memlens/model/ParseError.h"
#include "memlens/model/PickleMachine.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <span>
#include <string>

using namespace memlens::model;

namespace {

struct Loaded {
    PickleDocument doc;
    Value root;
};

std::unique_ptr<Loaded> load(const std::string& bytes, PickleLimits limits = {}) {
    auto out = std::make_unique<Loaded>();
    ByteReader in(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()));
    PickleMachine m(in, out->doc, nullptr, limits);
    out->root = m.run();
    return out;
}

ParseError refusal(const std::string& bytes, PickleLimits limits = {}) {
    try {
        load(bytes, limits);
    } catch (const ParseError& e) {
        return e;
    }
    ADD_FAILURE() << "accepted";
    return ParseError(0, "accepted");
}

std::vector<Value> items(const Loaded& l, const Value& v) {
    std::vector<Value> out;
    l.doc.forEach(v.ref, [&](const Value& x) { out.push_back(x); });
    return out;
}

std::string s(const Loaded& l, const Value& v) { return std::string(l.doc.strings.view(v.ref)); }

} // namespace

TEST(PickleMachine, IntegersOfEveryWidth) {
    // PROTO 2; a list of: BININT1 255, BININT2 0xBEEF, BININT -2, LONG1 5 bytes, LONG1 9 bytes 2^64-1,
    // LONG1 1 byte -1, LONG1 0 bytes, LONG4 2 bytes 0x0102; APPENDS
    std::string b = std::string("\x80\x02]q\x00(", 6) + "K\xff" + "M\xef\xbe" + std::string("J\xfe\xff\xff\xff", 5) +
                    std::string("\x8a\x05\x00\x00\x00\x00\x80", 7) +
                    std::string("\x8a\x09\xff\xff\xff\xff\xff\xff\xff\xff\x00", 11) + std::string("\x8a\x01\xff", 3) +
                    std::string("\x8a\x00", 2) + std::string("\x8b\x02\x00\x00\x00\x02\x01", 7) + "e.";
    auto l = load(b);
    auto v = items(*l, l->root);
    ASSERT_EQ(v.size(), 8u);
    EXPECT_EQ(v[0].asInt(), 255);
    EXPECT_EQ(v[1].asInt(), 0xBEEF);
    EXPECT_EQ(v[2].asInt(), -2);
    EXPECT_EQ(v[3].asInt(), -(int64_t(1) << 39));  // two's complement: the top bit of the last byte is the sign
    EXPECT_EQ(v[4].tag, Tag::UInt);
    EXPECT_EQ(v[4].asUInt(), ~uint64_t(0));
    EXPECT_EQ(v[5].asInt(), -1);
    EXPECT_EQ(v[6].asInt(), 0);
    EXPECT_EQ(v[7].asInt(), 0x0102);
}

TEST(PickleMachine, IntegersWiderThan64BitsAreRefused) {
    std::string b = std::string("\x80\x02\x8a\x0a", 4) + std::string(10, '\x7f') + ".";
    auto e = refusal(b);
    EXPECT_EQ(e.offset(), 2u);
    EXPECT_NE(std::string(e.what()).find("wider than 64 bits"), std::string::npos);
    // 2^64 exactly: 9 bytes 00..00 01
    std::string c = std::string("\x80\x02\x8a\x09", 4) + std::string(8, '\0') + "\x01.";
    EXPECT_NE(std::string(refusal(c).what()).find("wider than 64 bits"), std::string::npos);
}

TEST(PickleMachine, FloatsAreBigEndian) {
    // BINFLOAT 1.5 = 0x3FF8000000000000
    std::string b = std::string("\x80\x04G\x3f\xf8\x00\x00\x00\x00\x00\x00.", 12);
    auto l = load(b);
    EXPECT_EQ(l->root.tag, Tag::Float);
    EXPECT_DOUBLE_EQ(l->root.asFloat(), 1.5);
}

TEST(PickleMachine, StringsBytesAndMemo) {
    // SHORT_BINUNICODE 'abc' MEMOIZE, BINUNICODE 'é' (UTF-8), BINGET 0, SHORT_BINBYTES, TUPLE3 -> tuple; then a list
    std::string b = std::string("\x80\x04]\x94(\x8c\x03" "abc\x94X\x02\x00\x00\x00\xc3\xa9h\x01", 20) +
                    std::string("C\x02\x00\x01", 4) + "e.";
    auto l = load(b);
    auto v = items(*l, l->root);
    ASSERT_EQ(v.size(), 4u);
    EXPECT_EQ(s(*l, v[0]), "abc");
    EXPECT_EQ(s(*l, v[1]), "\xc3\xa9");
    EXPECT_EQ(v[2].tag, Tag::Str);
    EXPECT_EQ(v[2].ref, v[0].ref);  // the same interned string
    EXPECT_EQ(v[3].tag, Tag::Bytes);
    EXPECT_EQ(s(*l, v[3]), std::string("\x00\x01", 2));
}

// Memoised references that do not fit a packed memo slot (27 bits; here from 2 on) are kept
// beside it: strings, a number, a dict and a list read back through memo gets, the dict and the
// list as the same objects, and a slot stored over (BINPUT) reads its new value.
TEST(PickleMachine, MemoReferencesKeptBesideTheMemo) {
    // PROTO 4; ] MEMOIZE (memo 0) ( ; 20 strings s0..s19 each memoised (memo 1..20); BININT2 4660
    // memoised (21); } memoised (22); ] memoised (23); the gets of 1..23; "x" BINPUT 5 (memo 5
    // is now "x"), POP; BINGET 5; APPENDS STOP
    std::string b = std::string("\x80\x04]\x94(", 5);
    for (int i = 0; i < 20; ++i) {
        std::string t = "s" + std::to_string(i);
        b += std::string("\x8c") + static_cast<char>(t.size()) + t + "\x94";
    }
    b += std::string("M\x34\x12\x94}\x94]\x94", 8);
    for (int i = 1; i <= 23; ++i) b += std::string("h") + static_cast<char>(i);
    b += std::string("\x8c\x01x") + "q" + '\x05' + "0" + "h" + '\x05' + "e.";
    for (uint32_t wideFrom : {PackedMemo::kWide, 2u, 0u}) {
        PickleLimits limits;
        limits.memoWideFrom = wideFrom;
        auto l = load(b, limits);
        auto v = items(*l, l->root);
        ASSERT_EQ(v.size(), 47u) << wideFrom;
        for (int pass = 0; pass < 2; ++pass) {
            for (int i = 0; i < 20; ++i) {
                ASSERT_EQ(v[pass * 23 + i].tag, Tag::Str) << wideFrom;
                EXPECT_EQ(s(*l, v[pass * 23 + i]), "s" + std::to_string(i)) << wideFrom;
            }
            EXPECT_EQ(v[pass * 23 + 20].asInt(), 4660) << wideFrom;
            EXPECT_EQ(v[pass * 23 + 21].tag, Tag::Dict) << wideFrom;
            EXPECT_EQ(v[pass * 23 + 22].tag, Tag::List) << wideFrom;
        }
        EXPECT_EQ(v[21].ref, v[44].ref) << "the dict, got back";
        EXPECT_EQ(v[22].ref, v[45].ref) << "the list, got back";
        ASSERT_EQ(v[46].tag, Tag::Str);
        EXPECT_EQ(s(*l, v[46]), "x") << "memo 5 was stored over";
    }
}

TEST(PickleMachine, Protocol0TextOpcodes) {
    // a protocol 0 list with APPEND per item; GET 1 fetches the memoised UNICODE string again
    std::string b = "(lp0\nI12\naL-5L\naF0.25\naVx\\u00e9y\np1\naS'q\\n'\naI01\naNag1\na.";
    auto l = load(b);
    auto v = items(*l, l->root);
    ASSERT_EQ(v.size(), 8u);
    EXPECT_EQ(v[0].asInt(), 12);
    EXPECT_EQ(v[1].asInt(), -5);
    EXPECT_DOUBLE_EQ(v[2].asFloat(), 0.25);
    EXPECT_EQ(s(*l, v[3]), "x\xc3\xa9y");
    EXPECT_EQ(s(*l, v[4]), "q\n");
    EXPECT_EQ(v[5].tag, Tag::Bool);
    EXPECT_EQ(v[5].bits, 1u);
    EXPECT_EQ(v[6].tag, Tag::None);
    EXPECT_EQ(v[7].tag, Tag::Str);
    EXPECT_EQ(v[7].ref, v[3].ref);
}

TEST(PickleMachine, DictsTuplesSets) {
    testpickle::P d = testpickle::dict({{"a", testpickle::num(1)},
                                        {"t", testpickle::tuple({testpickle::num(0), testpickle::num(7)})},
                                        {"x", testpickle::none()}});
    for (int proto : {0, 1, 2, 3, 4, 5}) {
        auto l = load(testpickle::dumps(d, proto));
        ASSERT_EQ(l->root.tag, Tag::Dict) << proto;
        auto a = l->doc.strings.find("a");
        auto t = l->doc.strings.find("t");
        const Value* va = l->doc.get(l->root.ref, a);
        const Value* vt = l->doc.get(l->root.ref, t);
        ASSERT_TRUE(va && vt) << proto;
        EXPECT_EQ(va->asInt(), 1);
        ASSERT_EQ(vt->tag, Tag::Tuple);
        auto tv = items(*l, *vt);
        ASSERT_EQ(tv.size(), 2u);
        EXPECT_EQ(tv[1].asInt(), 7);
    }
    // EMPTY_SET ADDITEMS and FROZENSET
    std::string b = std::string("\x80\x04\x8f(K\x01K\x02\x90.", 10);
    auto l = load(b);
    EXPECT_EQ(l->root.tag, Tag::Set);
    EXPECT_EQ(items(*l, l->root).size(), 2u);
}

TEST(PickleMachine, OpcodesThatImportOrCallAreRefusedWithTheirOffset) {
    struct Case {
        const char* name;
        std::string bytes;
        uint64_t offset;
    };
    std::vector<Case> cases = {
        {"GLOBAL", "cposix\nsystem\n.", 0},
        {"STACK_GLOBAL", std::string("\x80\x04\x8c\x05posix\x8c\x06system\x93.", 19), 17},
        {"REDUCE", std::string("\x80\x02)R.", 5), 3},
        {"BUILD", std::string("\x80\x02}}b.", 6), 4},
        {"INST", "(iposix\nsystem\n.", 1},
        {"OBJ", "(o.", 1},
        {"NEWOBJ", std::string("\x80\x02))\x81.", 6), 4},
        {"NEWOBJ_EX", std::string("\x80\x04)))\x92.", 7), 5},
        {"EXT1", std::string("\x80\x02\x82\x01.", 5), 2},
        {"EXT2", std::string("\x80\x02\x83\x01\x00.", 6), 2},
        {"EXT4", std::string("\x80\x02\x84\x01\x00\x00\x00.", 8), 2},
        {"PERSID", "Pfoo\n.", 0},
        {"BINPERSID", std::string("\x80\x02K\x01Q.", 6), 4},
        {"NEXT_BUFFER", std::string("\x80\x05\x97.", 4), 2},
        {"READONLY_BUFFER", std::string("\x80\x05K\x01\x98.", 6), 4},
    };
    for (const auto& c : cases) {
        auto e = refusal(c.bytes);
        std::string what = e.what();
        EXPECT_NE(what.find(std::string("opcode ") + c.name + " "), std::string::npos) << c.name << ": " << what;
        EXPECT_NE(what.find("never executes"), std::string::npos) << c.name;
        EXPECT_EQ(e.offset(), c.offset) << c.name;
    }
}

TEST(PickleMachine, BrokenFilesGiveOneLineErrors) {
    EXPECT_NE(std::string(refusal(std::string("\x80\x04]\x94(K\x01", 7)).what()).find("truncated"), std::string::npos);
    EXPECT_NE(std::string(refusal("\x80\x04\xff.").what()).find("unknown pickle opcode 0xff"), std::string::npos);
    EXPECT_NE(std::string(refusal(std::string("\x80\x04h\x05.", 5)).what()).find("memo entry 5"), std::string::npos);
    EXPECT_NE(std::string(refusal(std::string("\x80\x04X\xff\xff\xff\x7f" "abc.", 11)).what()).find("longer than the rest"),
              std::string::npos);
    EXPECT_NE(std::string(refusal(std::string("\x80\x04" "e.", 4)).what()).find("MARK"), std::string::npos);
    EXPECT_NE(std::string(refusal(std::string("\x80\x04" "a.", 4)).what()).find("underflow"), std::string::npos);
    EXPECT_NE(std::string(refusal(std::string("\x80\x06K\x01.", 5)).what()).find("protocol 6"), std::string::npos);
}

TEST(PickleMachine, LimitsStopHostileShapes) {
    PickleLimits small;
    small.maxDepth = 50;
    small.maxMarks = 100;
    small.maxStack = 1000;
    // 60 nested lists: ]]]...aaa
    std::string deep = "\x80\x04" + std::string(60, ']') + std::string(59, 'a') + ".";
    EXPECT_NE(std::string(refusal(deep, small).what()).find("nested deeper than 50"), std::string::npos);
    std::string marks = "\x80\x04" + std::string(200, '(') + ".";
    EXPECT_NE(std::string(refusal(marks, small).what()).find("open MARKs"), std::string::npos);
    std::string wide = "\x80\x04" + std::string(2000, 'N') + ".";
    EXPECT_NE(std::string(refusal(wide, small).what()).find("values on the pickle stack"), std::string::npos);
    // a list put into itself
    std::string cyc = std::string("\x80\x04]\x94h\x00" "a.", 7);
    EXPECT_NE(std::string(refusal(cyc).what()).find("itself"), std::string::npos);
    // a memo index far away goes to the sparse memo, and can be read back
    std::string sparse = std::string("\x80\x04K\x07r\x00\x28\x6b\xee" "0j\x00\x28\x6b\xee.", 16);
    auto l = load(sparse);
    EXPECT_EQ(l->root.asInt(), 7);
}

// A memo of thousands of slots (MemoSlots seals all but the newest in compact blocks): gets of
// every old slot, in reverse order, of a dict memoised first, and of an old slot stored over
// (LONG_BINPUT) read what was stored there.
TEST(PickleMachine, OldMemoSlotsReadBack) {
    constexpr int kStrings = 5000;
    auto le32 = [](uint32_t v) {
        std::string b(4, '\0');
        for (int k = 0; k < 4; ++k) b[k] = static_cast<char>(v >> (8 * k));
        return b;
    };
    // PROTO 4; ] MEMOIZE (0) ( ; } MEMOIZE (1); "s0".."s4999" each memoised (2..5001);
    // "x" LONG_BINPUT 100, POP; LONG_BINGET 5001..2; LONG_BINGET 1; LONG_BINGET 100; APPENDS STOP
    std::string b = std::string("\x80\x04]\x94(}\x94", 7);
    for (int i = 0; i < kStrings; ++i) {
        std::string t = "s" + std::to_string(i);
        b += std::string("\x8c") + static_cast<char>(t.size()) + t + "\x94";
    }
    b += std::string("\x8c\x01x") + "r" + le32(100) + "0";
    for (int i = kStrings - 1; i >= 0; --i) b += "j" + le32(static_cast<uint32_t>(i + 2));
    b += "j" + le32(1) + "j" + le32(100) + "e.";
    for (uint32_t wideFrom : {PackedMemo::kWide, 2u}) {
        PickleLimits limits;
        limits.memoWideFrom = wideFrom;
        auto l = load(b, limits);
        auto v = items(*l, l->root);
        ASSERT_EQ(v.size(), static_cast<size_t>(2 * kStrings + 3)) << wideFrom;
        ASSERT_EQ(v[0].tag, Tag::Dict);
        for (int i = 0; i < kStrings; ++i) {
            EXPECT_EQ(s(*l, v[1 + i]), "s" + std::to_string(i)) << wideFrom;
            // memo 100 held "s98" until "x" was put over it
            const std::string got = s(*l, v[1 + kStrings + (kStrings - 1 - i)]);
            EXPECT_EQ(got, i == 98 ? std::string("x") : "s" + std::to_string(i)) << wideFrom << " memo " << i + 2;
        }
        ASSERT_EQ(v[1 + 2 * kStrings].tag, Tag::Dict);
        EXPECT_EQ(v[1 + 2 * kStrings].ref, v[0].ref) << "the dict, got back";
        EXPECT_EQ(s(*l, v[2 + 2 * kStrings]), "x");
    }
}

// Empty lists (torch 2.11 writes a new `[]` for the frames of each trace entry without any) take
// no node each once stored: 10,000 of them, each in a list of its own, memoised, read back empty,
// through memo gets too. A filled list is its own node still; an empty one changed after it was
// stored is refused, as any container changed after it was used.
TEST(PickleMachine, StoredEmptyListsShareOneNode) {
    constexpr int kLists = 10000;
    // PROTO 4; ] MEMOIZE (0) ( ; kLists times `] MEMOIZE ( ] MEMOIZE APPENDS` (memo 1 + 2i: the
    // list around, 2 + 2i: the empty one); a list [1] memoised; LONG_BINGET 2, 4; APPENDS STOP
    std::string b = std::string("\x80\x04]\x94(", 5);
    for (int i = 0; i < kLists; ++i) b += std::string("]\x94(]\x94" "e", 6);
    b += std::string("]\x94(K\x01" "e", 6);
    b += std::string("j\x02\x00\x00\x00j\x04\x00\x00\x00", 10) + "e.";
    auto l = load(b);
    auto v = items(*l, l->root);
    ASSERT_EQ(v.size(), static_cast<size_t>(kLists + 3));
    for (int i = 0; i < kLists; ++i) {
        auto around = items(*l, v[i]);
        ASSERT_EQ(around.size(), 1u) << i;
        ASSERT_EQ(around[0].tag, Tag::List) << i;
        ASSERT_EQ(items(*l, around[0]).size(), 0u) << i;
    }
    auto filled = items(*l, v[kLists]);
    ASSERT_EQ(filled.size(), 1u);
    EXPECT_EQ(filled[0].asInt(), 1);
    EXPECT_EQ(v[kLists + 1].tag, Tag::List);
    EXPECT_EQ(items(*l, v[kLists + 1]).size(), 0u) << "memo 2, got back";
    EXPECT_EQ(items(*l, v[kLists + 2]).size(), 0u) << "memo 4, got back";
    // a node each for the root, the lists around and the filled one, and the one empty list:
    // each empty list's own node was let go once it was stored, and the next list took it
    EXPECT_LE(l->doc.nodeCount(), static_cast<size_t>(kLists + 4));

    // ] MEMOIZE ( ] MEMOIZE APPENDS (the empty list stored), BINGET 1, "x" APPEND: refused
    const std::string changed = std::string("\x80\x04]\x94(]\x94" "eh\x01\x8c\x01x" "a.", 16);
    EXPECT_NE(std::string(refusal(changed).what()).find("changed after it was used"), std::string::npos)
        << refusal(changed).what();
}

namespace {

using namespace testpickle;

// Text of a value, whatever holds it: a dict and the row it was absorbed into read the same, and
// so do a list and the stack a run of memo gets became.
struct Rendered {
    const PickleDocument& doc;
    const std::vector<std::string>& rows;
    const std::vector<std::string>& stacks;
    std::string operator()(const Value& v) const {
        switch (v.tag) {
        case Tag::None: return "None";
        case Tag::Bool: return v.bits ? "True" : "False";
        case Tag::Int: return std::to_string(v.asInt());
        case Tag::UInt: return std::to_string(v.asUInt());
        case Tag::Str: return "'" + std::string(doc.strings.view(v.ref)) + "'";
        case Tag::Row: return rows.at(v.ref);
        case Tag::Stack: return stacks.at(v.ref);
        case Tag::List:
        case Tag::Dict:
        case Tag::Tuple: {
            const auto& nd = doc.node(v.ref);
            if (nd.isCollapsed()) return (*this)(nd.collapsedValue());
            std::string out = v.tag == Tag::List ? "[" : v.tag == Tag::Dict ? "{" : "(";
            size_t i = 0;
            doc.forEach(v.ref, [&](const Value& x) {
                out += (*this)(x) + (v.tag != Tag::Dict ? "," : i % 2 == 0 ? "=" : ";");
                ++i;
            });
            return out + (v.tag == Tag::List ? "]" : v.tag == Tag::Dict ? "}" : ")");
        }
        default: return "?";
        }
    }
};

// The same text from the values written, independently of the machine.
std::string renderPy(const P& p) {
    switch (p->kind) {
    case Py::None: return "None";
    case Py::Bool: return p->i ? "True" : "False";
    case Py::Int: return std::to_string(p->i);
    case Py::UInt: return std::to_string(p->u);
    case Py::Float: return "?";
    case Py::Str: return "'" + p->s + "'";
    case Py::List:
    case Py::Tuple: {
        std::string out = p->kind == Py::List ? "[" : "(";
        for (const auto& x : p->items) out += renderPy(x) + ",";
        return out + (p->kind == Py::List ? "]" : ")");
    }
    case Py::Dict: {
        std::string out = "{";
        for (const auto& [k, v] : p->kv) out += renderPy(k) + "=" + renderPy(v) + ";";
        return out + "}";
    }
    }
    return "?";
}

// Absorbs as a snapshot's hooks do: a dict of 4 to 64 items with str keys into a row, a run of
// memo gets of strings into a stack (interned by its text, as frames lists are).
struct RowHooks : PickleHooks {
    std::vector<std::string> rows, stacks;
    Value collapse(PickleDocument&, Value v) override { return v; }
    bool absorbDict(PickleDocument& doc, const Value* items, size_t n, Value& out) override {
        if (n < 4 || n > 64) return false;
        std::string text = "{";
        for (size_t i = 0; i < n; ++i) {
            if (i % 2 == 0 && items[i].tag != Tag::Str) return false;
            text += Rendered{doc, rows, stacks}(items[i]) + (i % 2 == 0 ? "=" : ";");
        }
        rows.push_back(text + "}");
        out = Value::node(Tag::Row, static_cast<uint32_t>(rows.size() - 1));
        return true;
    }
    bool absorbMemoRun(PickleDocument& doc, const MemoGetRun& run, Value& out) override {
        std::string text = "[";
        if (!run.forEachSlot([&](const MemoSlot& s) {
                if (s.tag != Tag::Str) return false;
                text += "'" + std::string(doc.strings.view(s.ref)) + "',";
                return true;
            }))
            return false;
        text += "]";
        auto it = std::find(stacks.begin(), stacks.end(), text);
        if (it == stacks.end()) it = stacks.insert(stacks.end(), text);
        out = Value::node(Tag::Stack, static_cast<uint32_t>(it - stacks.begin()));
        return true;
    }
};

struct HookedLoad {
    PickleDocument doc;
    RowHooks hooks;
    Value root;
    uint64_t whole = 0;
    uint64_t replayed = 0;
    std::string text() const { return Rendered{doc, hooks.rows, hooks.stacks}(root); }
};

std::unique_ptr<HookedLoad> loadHooked(const std::string& bytes, bool wholeDicts, bool templates = true) {
    auto out = std::make_unique<HookedLoad>();
    ByteReader in(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()));
    PickleLimits limits;
    limits.wholeDicts = wholeDicts;
    limits.dictTemplates = templates;
    PickleMachine m(in, out->doc, &out->hooks, limits);
    out->root = m.run();
    out->whole = m.wholeDictsRead();
    out->replayed = m.dictsReplayed();
    return out;
}

// A dict of these keys and values, the keys the objects given (shared, as Python's interned keys
// are: memo gets after the first dict).
P dictOf(std::vector<std::pair<P, P>> kv) {
    auto p = std::make_shared<Py>();
    p->kind = Py::Dict;
    p->kv = std::move(kv);
    return p;
}

} // namespace

// Dicts written whole are read past the stack where they can be (scalars, short strings, memo
// gets, empty lists and runs of memo gets), and left to the stack otherwise; either way the
// values, the rows, the stacks and the memo (a dict and a list read again by a memo get) are what
// the stack alone gives, and what was written.
TEST(PickleMachine, DictsReadWholeGiveWhatTheStackGives) {
    P act = str("alloc"), fa = str("f.py:1"), fb = str("g.py:2"), fc = str("h.py:3");
    P twice = str("N/A");
    P shared = list({fb, fc});
    auto entry = [&](int64_t size, P frames, std::vector<std::pair<std::string, P>> more = {}) {
        std::vector<std::pair<std::string, P>> kv = {{"action", act}, {"addr", unum(0x7f0000001000 + size)},
                                                     {"size", num(size)}, {"frames", frames}};
        kv.insert(kv.end(), more.begin(), more.end());
        return dict(kv);
    };
    P again = entry(4096, list({fa, fb}));
    std::vector<P> dicts = {
        dict({{"a", fa}, {"b", fb}, {"c", fc}}),        // whole: new strings, memoised
        entry(1, list({fa, fb, fc})),                   // whole: a run of memo gets
        entry(300, list({fc, fa})),                     // whole
        entry(70000, list({fa, fb, fc, fa})),           // whole
        entry(2, list()),                               // whole: an empty list
        entry(3, list({fa})),                           // stack: one item is APPEND
        entry(4, list({fa}), {{"cc", twice}, {"um", twice}}),  // stack: a get of its own slot
        entry(5, list({fa, fb}), {{"meta", dict({{"k", num(1)}})}}),  // stack: a dict inside
        entry(6, list({fa, fb}), {{"big", unum(uint64_t(1) << 63)}}),  // stack: a 9-byte LONG1
        entry(7, list({fa, fb}), {{"t", tuple({num(1), num(2)})}}),    // stack: a tuple
        entry(8, list({fa, fb}), {{"long", str(std::string(300, 'x'))}}),  // stack: BINUNICODE
        entry(9, list({fa, num(5)})),                   // stack: not only memo gets
        entry(10, shared),                              // whole
        entry(11, shared),                              // whole: the list again, a memo get
        entry(12, list({fb, fa}), {{"none", none()}, {"yes", boolean(true)}, {"no", boolean(false)}}),  // whole
        again,                                          // whole
        again,                                          // a memo get of the dict
        dict({{"only", num(1)}}),                       // stack: SETITEM
    };
    const uint64_t expectedWhole = 9;
    const std::string written = renderPy(list(dicts));
    const std::string bytes = dumps(list(dicts), 4);
    auto whole = loadHooked(bytes, true);
    auto stack = loadHooked(bytes, false);
    EXPECT_EQ(whole->whole, expectedWhole);
    EXPECT_EQ(stack->whole, 0u);
    EXPECT_EQ(whole->text(), written);
    EXPECT_EQ(stack->text(), written);
    EXPECT_EQ(whole->hooks.rows, stack->hooks.rows);
    EXPECT_EQ(whole->hooks.stacks, stack->hooks.stacks);
    // protocol 2 memoises with BINPUT: nothing is read whole, and the values are the same
    auto proto2 = loadHooked(dumps(list(dicts), 2), true);
    EXPECT_EQ(proto2->whole, 0u);
    EXPECT_EQ(proto2->text(), written);
}

// A training loop's trace: the same entries every iteration, only their numbers differ. A dict
// whose bytes are those of one read before, its numbers and a get of a shared frames list aside,
// is read by that dict's template (DictTemplates). The rows, the stacks and the memo are what
// the stack alone gives and what was written: numbers that change value, sign or width (another
// opcode: another template), a frames list shared by the next entries (a memo get of a slot of
// its own each time), and a memo slot the templates name given another value (BINPUT) between
// two iterations, after which the entries name the new value.
TEST(PickleMachine, DictsReadByTemplateGiveWhatTheStackGives) {
    P fa = str("f.py:1"), fb = str("g.py:2"), fc = str("h.py:3"), zz = str("zzz");
    P kAction = str("action"), kAddr = str("addr"), kSize = str("size"), kFrames = str("frames"), kTime = str("time_us");
    P alloc = str("alloc"), freeRequested = str("free_requested"), freeCompleted = str("free_completed");
    // sizes of every width: BININT1, BININT2, BININT, negative (BININT, then BININT1 as the
    // iterations add to it), LONG1 of 5 bytes
    const int64_t sizes[] = {7, 300, 70000, -5, int64_t(1) << 33};
    constexpr int kIterations = 8, kRewrittenFrom = 6, kEntries = kIterations * 5 * 3;
    // written: fa in every frames list; expected: from iteration kRewrittenFrom on, what the
    // rewritten slot holds
    auto build = [&](bool expected) {
        std::vector<P> items = {fa, fb, fc, zz};  // fa is memo slot 1 (the list is 0), zz slot 4
        for (int it = 0; it < kIterations; ++it) {
            if (it == kRewrittenFrom) items.push_back(str("REWRITE"));
            P first = expected && it >= kRewrittenFrom ? zz : fa;
            for (int k = 0; k < 5; ++k) {
                P frames = list({first, fb, k % 2 ? fc : first});
                const uint64_t addr = 0x7f0000000000 + 4096 * uint64_t(it * 5 + k);
                const int64_t time = 1700000000000000 + 100 * (it * 5 + k);
                for (P action : {alloc, freeRequested, freeCompleted})  // one list object: gets after the first
                    items.push_back(dictOf({{kAction, action}, {kAddr, unum(addr)}, {kSize, num(sizes[k] + it)},
                                            {kFrames, frames}, {kTime, num(time)}}));
            }
        }
        return list(items);
    };
    std::string bytes = dumps(build(false), 4);
    // between two iterations: push 'zzz' (a get of slot 4), BINPUT it into slot 1, POP
    const std::string marker = std::string("\x8c\x07REWRITE\x94", 10);
    const size_t at = bytes.find(marker);
    ASSERT_NE(at, std::string::npos);
    bytes.insert(at + marker.size(), std::string("h\x04q\x01" "0", 5));
    const std::string written = renderPy(build(true));

    auto templated = loadHooked(bytes, true);
    auto whole = loadHooked(bytes, true, false);
    auto stack = loadHooked(bytes, false);
    EXPECT_EQ(templated->text(), written);
    EXPECT_EQ(whole->text(), written);
    EXPECT_EQ(stack->text(), written);
    EXPECT_EQ(templated->hooks.rows, stack->hooks.rows);
    EXPECT_EQ(templated->hooks.stacks, stack->hooks.stacks);
    // every entry is read whole either way; by a template, most of them: all but those whose
    // bytes came first, in an iteration and after the rewrite (each of the 15 entries of the
    // first iteration, and of the one after the rewrite, and the sizes that change width)
    EXPECT_EQ(templated->whole, uint64_t(kEntries));
    EXPECT_EQ(whole->whole, uint64_t(kEntries));
    EXPECT_EQ(whole->replayed, 0u);
    EXPECT_GE(templated->replayed, uint64_t(kEntries / 2));
    EXPECT_LT(templated->replayed, uint64_t(kEntries));
}
