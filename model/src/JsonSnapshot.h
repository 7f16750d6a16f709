#pragma once
// Internal to the snapshot reader: memory_viz's JSON form of a snapshot (the same dict, written
// with json.dump; memory_viz tries JSON.parse before its unpickler) turned into the pickle torch
// would write, so that the one reader reads both. Streamed: SAX events become pickle opcodes.
#include "memlens/model/ByteReader.h"
#include "memlens/model/SnapshotReader.h"

#include <string>

namespace memlens::model {

// The pickle bytes of the JSON document in `in` (the rest of the file). Throws ParseError with
// the JSON parser's one-line message and byte.
// Reports progress and notices a cancel (model::Cancelled) as the reader does.
std::string jsonSnapshotToPickle(ByteReader& in, const LoadOptions& options);

} // namespace memlens::model
