#pragma once
// Internal to the snapshot reader.
#include "SnapshotKeys.h"

#include "memlens/model/PickleDocument.h"
#include "memlens/model/Snapshot.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace memlens::model {

// The external annotations of a snapshot as they are read: a dict of exactly stage, name (both
// strings), device and time_us (both integers), in any order, becomes an Annotation as soon as it
// is complete. A recording with record_function ranges has one every few trace entries, and a
// generic dict costs 144 bytes until the tree is read. Any other dict is left as it is: the tree
// reads it and says what is wrong with it.
class AnnotationRows {
public:
    // The annotation of a dict's fields (stage and name: strings; device and time_us: null or
    // absent where not given, read when integers): what the tree and this reader both make.
    static Annotation make(const StringTable& strings, const Value& stage, const Value& name, const Value* device,
                           const Value* time);

    // fileBytes: the file's size (or an estimate), for the room reserved up front
    AnnotationRows(const PickleDocument& doc, const SnapshotKeys& keys, uint64_t fileBytes);

    // The annotation of a dict's keys and values (items: key, value, key, value ...); nullopt when
    // they are not one.
    std::optional<uint32_t> fromItems(const Value* items, size_t n);
    const Annotation& operator[](uint32_t i) const { return rows_[i]; }

private:
    const PickleDocument& doc_;
    const SnapshotKeys& k_;
    std::vector<Annotation> rows_;
};

} // namespace memlens::model
