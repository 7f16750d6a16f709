#pragma once
// Internal to the snapshot reader.
#include "AnnotationRows.h"
#include "BlockRows.h"
#include "FrameRunCache.h"
#include "FrameTable.h"
#include "SnapshotKeys.h"
#include "TraceRows.h"

#include "memlens/model/PickleDocument.h"
#include "memlens/model/PickleMachine.h"
#include "memlens/model/Snapshot.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace memlens::model {

// Collapses a snapshot's pickle while it is read: frames, stacks and trace entries are turned
// into compact rows as soon as they are complete (the frames and stacks into snap, the entries
// into rows()), so the generic tree stays small.
class SnapshotHooks final : public PickleHooks {
public:
    SnapshotHooks(PickleDocument& doc, const SnapshotKeys& keys, Snapshot& snap, uint64_t fileBytes);

    Value collapse(PickleDocument& doc, Value v) override;
    // A dict filled by one SETITEMS: frames and trace entries become rows without being stored.
    bool absorbDict(PickleDocument&, const Value* items, size_t n, Value& out) override {
        return n >= 4 && n <= 64 && absorb(items, n, out);
    }
    bool absorbList(PickleDocument&, const Value* items, size_t n, Value& out) override;
    // A frames list read whole from its bytes (the machine's memo gets of frames).
    bool absorbMemoRun(PickleDocument&, const MemoGetRun& run, Value& out) override {
        return frameRuns_.absorb(run, out, [this](const FrameId* ids, size_t n) {
            return Value::node(Tag::Stack, frames_.stack(ids, n));
        });
    }
    size_t recallMemoRun(PickleDocument&, const uint8_t* p, size_t avail, Value& out) override {
        return frameRuns_.recall(p, avail, out);
    }
    // Plans for trace entries (TraceRows::plan): only for a dict FrameTable refuses whatever its
    // numbers (absorb() offers a dict to the frames first).
    int32_t planDict(const Value* items, size_t n, const uint8_t* holeItems, size_t holes,
                     uint16_t& refusedNegative) override;
    PlanRecords planRecords() override { return rows_.planRecords(); }
    void memoRewritten(uint64_t, Value old) override {
        if (old.tag == Tag::Frame) frameRuns_.clear();  // known runs may name other frames now
    }
    void expandList(PickleDocument&, Value collapsed, std::vector<Value>& items) override;

    TraceRows& traceRows() { return rows_; }
    const BlockRows& blockRows() const { return blocks_; }
    const AnnotationRows& annotationRows() const { return annotations_; }

private:
    bool absorb(const Value* items, size_t n, Value& out);
    StackId internStack(uint32_t listNode);

    PickleDocument& doc_;
    Snapshot& snap_;
    FrameTable frames_;
    TraceRows rows_;
    BlockRows blocks_;
    AnnotationRows annotations_;
    FrameRunCache frameRuns_;
    std::vector<FrameId> tmpFrames_;
    std::vector<Value> tmpItems_;
};

} // namespace memlens::model
