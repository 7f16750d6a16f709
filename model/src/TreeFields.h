#pragma once
// Internal to the snapshot reader.
#include "memlens/model/PickleDocument.h"
#include "memlens/model/Snapshot.h"

#include <cstdint>
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
    std::string keyPath(const std::string& path, StringId key) const;
    const Value* field(uint32_t dict, StringId key) const { return doc_.get(dict, key); }
    // A non-negative int under key; dflt when absent or None unless required.
    uint64_t intField(uint32_t dict, StringId key, const std::string& path, bool required, uint64_t dflt = 0) const;
    // A frames list: its stack, 0 for none or an empty list.
    StackId stackOf(const Value* v, const std::string& path) const;
    uint32_t dictNode(const Value& v, const std::string& path, const char* what) const;
    uint32_t listNode(const Value& v, const std::string& path, const char* what) const;
    std::vector<Value> listItems(const Value& v, const std::string& path, const char* what) const;
    // A value as Python would print it, roughly (settings, error messages).
    std::string toText(const Value& v, int depth) const;

private:
    const PickleDocument& doc_;
};

} // namespace memlens::model
