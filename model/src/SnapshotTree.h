#pragma once
// Internal to the snapshot reader.
#include "AnnotationRows.h"
#include "BlockRows.h"
#include "SnapshotKeys.h"
#include "TraceRows.h"
#include "TreeFields.h"

#include "memlens/model/PickleDocument.h"
#include "memlens/model/Snapshot.h"
#include "memlens/model/SnapshotReader.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace memlens::model {

// Builds the Snapshot from what the pickle left once it is read (the hooks having collapsed
// frames, stacks and trace entries): the layout of the top level (a dict, a bare list of segments,
// torch 2.0's blocks with their history), the segments and their blocks, the per-device traces,
// annotations and allocator settings; then checks that the segments add up.
class SnapshotTree {
public:
    SnapshotTree(const PickleDocument& doc, const SnapshotKeys& keys, TraceRows& rows, const BlockRows& blocks,
                 const AnnotationRows& annotations, Snapshot& snap)
        : doc_(doc), k_(keys), fields_(doc), traceRows_(rows), blockRows_(blocks), annotationRows_(annotations), snap_(snap) {}

    void finish(Value root, int protocol, uint64_t fileBytes, const LoadOptions& options);

private:
    // hostSegment: a segment of host_segments (its device is kHostDevice, whatever it says)
    void readSegment(const Value& sv, const TreePath& path, std::vector<Block>& blocks,
                     bool hostSegment = false);
    // device_traces (one list per device) and host_traces (the host's entries: one list of them,
    // or a list holding that list)
    void readTraces(const Value* deviceTraces, const Value* hostTraces);
    void readTraceFlags(const Value& holder);
    void applyTraceFlags();
    void noteUnknownKeys(const Value& root);
    void readAnnotations(const Value& av);
    void readSettings(const Value& sv);
    DeviceData& deviceData(int d);
    void checkInvariants();

    const PickleDocument& doc_;
    const SnapshotKeys& k_;
    TreeFields fields_;
    TraceRows& traceRows_;
    const BlockRows& blockRows_;  // the block dicts read as they completed
    const AnnotationRows& annotationRows_;  // the annotation dicts read as they completed
    Snapshot& snap_;
    bool legacy_ = false;          // torch 2.0 blocks (a history instead of frames)
    std::vector<Segment> segTmp_;  // in file order; blocks are attached per device in finish()
    static constexpr int kAllDevices = INT32_MIN;
    std::map<int, Value> overflowed_, maxEntries_;  // by device (kAllDevices: one value for all)
};

} // namespace memlens::model
