#pragma once
// Internal to the snapshot reader: memory_viz's JSON form of a snapshot (the same dict, written
// with json.dump; memory_viz tries JSON.parse before its unpickler) turned into the pickle torch
// would write, so that the one reader reads both. Streamed: SAX events become pickle opcodes.
#include "memlens/model/ByteReader.h"
#include "memlens/model/SnapshotReader.h"

namespace memlens::model {

// The pickle bytes of the JSON document in `in` (the rest of the file), handed to sink in pieces
// of about 1 MiB as the JSON is parsed (never the whole pickle at once); stops early when the
// sink returns false. Throws ParseError with the JSON parser's one-line message and byte.
// Reports progress and notices a cancel (model::Cancelled) as the reader does.
void jsonSnapshotToPickle(ByteReader& in, const LoadOptions& options, const ByteReader::Sink& sink);

} // namespace memlens::model
