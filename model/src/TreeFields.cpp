#include "TreeFields.h"

#include "memlens/model/ParseError.h"

#include <cstdio>

namespace memlens::model {

void TreeFields::fail(const std::string& path, const std::string& what) {
    throw ParseError(ParseError::kNoOffset, path, what);
}

void TreeFields::fail(const TreePath& path, const std::string& what) const { fail(path.text(doc_.strings), what); }

uint64_t TreeFields::intValue(const Value* v, StringId key, const TreePath& path, bool required, uint64_t dflt) const {
    if (!v || v->tag == Tag::None) {
        if (required) fail(path, "missing key '" + std::string(doc_.strings.view(key)) + "' (expected an int)");
        return dflt;
    }
    if (!isNonNegativeInt(*v)) {
        if (!v->isInt()) fail(path.key(key), std::string("expected an int, found a ") + tagName(v->tag));
        fail(path.key(key), "expected a non-negative int, found " + std::to_string(v->asInt()));
    }
    return v->bits;
}

std::optional<StackId> TreeFields::framesStack(const Value* v) const {
    if (!v || v->tag == Tag::None) return 0;
    if (v->tag == Tag::Stack) return v->ref;
    if (v->tag == Tag::List && doc_.node(v->ref).count == 0) return 0;
    return std::nullopt;
}

StackId TreeFields::stackOf(const Value* v, const TreePath& path) const {
    if (auto s = framesStack(v)) return *s;
    fail(path, std::string("expected a list of frame dicts {filename, name, line}, found a ") + tagName(v->tag));
}

uint32_t TreeFields::dictNode(const Value& v, const TreePath& path, const char* what) const {
    if (v.tag != Tag::Dict) fail(path, std::string("expected ") + what + " dict, found a " + tagName(v.tag));
    return v.ref;
}

uint32_t TreeFields::listNode(const Value& v, const TreePath& path, const char* what) const {
    if (v.tag == Tag::Stack) {  // a list of frames where another list was expected
        fail(path, std::string("expected a list of ") + what + ", found a list of frames");
    }
    if (v.tag != Tag::List && v.tag != Tag::Tuple)
        fail(path, std::string("expected a list of ") + what + ", found a " + tagName(v.tag));
    return v.ref;
}

std::vector<Value> TreeFields::listItems(const Value& v, const TreePath& path, const char* what) const {
    uint32_t node = listNode(v, path, what);
    std::vector<Value> out;
    out.reserve(doc_.node(node).count);
    doc_.forEach(node, [&](const Value& x) { out.push_back(x); });
    return out;
}

std::string TreeFields::toText(const Value& v, int depth) const {
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

} // namespace memlens::model
