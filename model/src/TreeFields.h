#pragma once
// Internal to the snapshot reader.
#include "memlens/model/PickleDocument.h"
#include "memlens/model/Snapshot.h"
#include "TreePath.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace memlens::model {

// Typed access to the tree a pickle left (what the hooks did not collapse), with errors naming the
// path of what was wrong: "segments[3]['blocks'][0]['state']: expected a str, found a int".
class TreeFields {
public:
    explicit TreeFields(const PickleDocument& doc) : doc_(doc) {}

    // Throws a ParseError at path (no byte offset: the tree is read after the file).
    [[noreturn]] static void fail(const std::string& path, const std::string& what);
    [[noreturn]] void fail(const TreePath& path, const std::string& what) const;
    const Value* field(uint32_t dict, StringId key) const { return doc_.get(dict, key); }
    // A non-negative int under key; dflt when absent or None unless required.
    uint64_t intField(uint32_t dict, StringId key, const TreePath& path, bool required, uint64_t dflt = 0) const {
        return intValue(field(dict, key), key, path, required, dflt);
    }
    // The same for the value found under key (nullptr: absent).
    uint64_t intValue(const Value* v, StringId key, const TreePath& path, bool required, uint64_t dflt = 0) const;
    // The values under KEYS, in one pass over the dict (a dict of n keys read for k of them costs
    // n, not n * k); nullptr where absent. The last of a repeated key wins, as in Python.
    template <size_t N>
    void fieldsOf(uint32_t dict, const StringId (&keys)[N], const Value* (&out)[N]) const {
        for (auto& o : out) o = nullptr;
        doc_.forEachPair(dict, [&](const Value& k, const Value& v) {
            if (k.tag != Tag::Str) return;
            for (size_t j = 0; j < N; ++j)
                if (k.ref == keys[j]) {
                    out[j] = &v;
                    return;
                }
        });
    }
    // A frames list: its stack, 0 for none or an empty list.
    StackId stackOf(const Value* v, const TreePath& path) const;
    // What intValue and stackOf accept, told without throwing (for BlockRows, which leaves
    // anything else to them): an int that is not negative; a frames list's stack.
    static bool isNonNegativeInt(const Value& v) { return v.isInt() && !(v.tag == Tag::Int && v.asInt() < 0); }
    std::optional<StackId> framesStack(const Value* v) const;
    uint32_t dictNode(const Value& v, const TreePath& path, const char* what) const;
    uint32_t listNode(const Value& v, const TreePath& path, const char* what) const;
    std::vector<Value> listItems(const Value& v, const TreePath& path, const char* what) const;
    // A value as Python would print it, roughly (settings, error messages).
    std::string toText(const Value& v, int depth) const;

private:
    const PickleDocument& doc_;
};

} // namespace memlens::model
