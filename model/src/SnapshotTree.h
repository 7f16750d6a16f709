#pragma once
// Internal to the snapshot reader.
#include "SnapshotKeys.h"
#include "TraceRows.h"
#include "TreeFields.h"

#include "memlens/model/PickleDocument.h"
#include "memlens/model/Snapshot.h"
#include "memlens/model/SnapshotReader.h"

#include <cstdint>
#include <string>
#include <vector>

namespace memlens::model {

// Builds the Snapshot from what the pickle left once it is read (the hooks having collapsed
// frames, stacks and trace entries): the layout of the top level (a dict, a bare list of segments,
// torch 2.0's blocks with their history), the segments and their blocks, the per-device traces,
// annotations and allocator settings; then checks that the segments add up.
class SnapshotTree {
public:
    SnapshotTree(const PickleDocument& doc, const SnapshotKeys& keys, TraceRows& rows, Snapshot& snap)
        : doc_(doc), k_(keys), fields_(doc), traceRows_(rows), snap_(snap) {}

    void finish(Value root, int protocol, uint64_t fileBytes, const LoadOptions& options);

private:
    void readSegment(const Value& sv, const std::string& path, std::vector<std::vector<Block>>& blocksOut);
    void readTraces(const Value& tv);
    void readAnnotations(const Value& av);
    void readSettings(const Value& sv);
    DeviceData& deviceData(int d);
    void checkInvariants();

    const PickleDocument& doc_;
    const SnapshotKeys& k_;
    TreeFields fields_;
    TraceRows& traceRows_;
    Snapshot& snap_;
    bool legacy_ = false;          // torch 2.0 blocks (a history instead of frames)
    std::vector<Segment> segTmp_;  // in file order; blocks are attached per device in finish()
};

} // namespace memlens::model
