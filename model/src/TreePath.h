#pragma once
// Internal to the snapshot reader: where a value sits in the tree ("segments[3]['blocks'][0]"),
// spelled out only when an error names it. A path is its parent, a key or an index: building one
// costs nothing, so a reader of 175,000 blocks does not write 175,000 strings that no error needs.
#include "memlens/model/StringTable.h"

#include <cstddef>
#include <string>
#include <string_view>

namespace memlens::model {

class TreePath {
public:
    TreePath(const std::string& text) : text_(text) {}  // NOLINT: a path already spelled out
    TreePath(const char* text) : text_(text) {}         // NOLINT
    // The child at an index or a key; it refers to this path, which must outlive it.
    TreePath index(size_t i) const { return TreePath(this, Kind::Index, i); }
    TreePath key(StringId k) const { return TreePath(this, Kind::Key, k); }
    std::string text(const StringTable& strings) const {
        switch (kind_) {
        case Kind::Text: return std::string(text_);
        case Kind::Index: return parent_->text(strings) + "[" + std::to_string(n_) + "]";
        case Kind::Key: return parent_->text(strings) + "['" + std::string(strings.view(static_cast<StringId>(n_))) + "']";
        }
        return {};
    }

private:
    enum class Kind { Text, Index, Key };
    TreePath(const TreePath* parent, Kind kind, size_t n) : parent_(parent), kind_(kind), n_(n) {}
    const TreePath* parent_ = nullptr;
    std::string_view text_;
    Kind kind_ = Kind::Text;
    size_t n_ = 0;
};

} // namespace memlens::model
