#pragma once
// What the packed trace columns (OffsetColumn, IndexColumn, DictionaryColumn) share: equality by
// the values they hold, not by how they are packed (the same values may sit in the packed part
// or aside, or in another order in a dictionary).
#include <cstddef>

namespace memlens::model {

template <class Column>
bool sameValues(const Column& a, const Column& b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
        if (a[i] != b[i]) return false;
    return true;
}

} // namespace memlens::model
