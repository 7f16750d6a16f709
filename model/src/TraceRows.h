#pragma once
// Internal to the snapshot reader.
#include "SnapshotKeys.h"

#include "memlens/model/HandoffQueue.h"
#include "memlens/model/PickleDocument.h"
#include "memlens/model/PickleMachine.h"
#include "memlens/model/Snapshot.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace memlens::model {

// The trace entries of a snapshot as it is read: each entry dict becomes a row of the columns as
// soon as it is complete (rows() holds all devices' entries, in the order read). The parsing
// thread reads each entry's fields and numbers its row; the columns are appended to on a second
// thread (a HandoffQueue of the rows' fields, or of a plan and its holes' values), about a
// quarter of a replayed entry's work. finish() (or rows()) waits for them.
class TraceRows {
public:
    TraceRows(const PickleDocument& doc, const SnapshotKeys& keys, uint64_t fileBytes);

    // The row of a trace entry dict's keys and values into row; false when they are not one. (Not
    // an optional: returned from this call, out of line, it was built in memory by two narrow
    // stores and read back as one word, a stall the store buffer cannot forward, for every entry.)
    bool fromItems(const Value* items, size_t n, uint32_t& row);
    // Rows by plan, for dicts read by a template (PickleHooks::planDict): the dict at items, just
    // made a row, has numbers (or a frames list) at holeItems that change from one dict to the next
    // and keeps the rest. A plan keeps its row and where each hole goes; -1 where the dict is not a
    // plain row whose holes are each the only value of a field. The machine queues the holes'
    // values of such a dict (numbers, and the frames list's stack) with the plan's number
    // (planRecords()), and numbers its row; consume() makes the row read() would make. read()
    // refuses some negative numbers (a negative size): the plan names their holes in
    // refusedNegative, and the machine reads a dict with one item by item.
    int32_t plan(const Value* items, size_t n, const uint8_t* holeItems, size_t holes, uint16_t& refusedNegative);
    PickleHooks::PlanRecords planRecords() { return {&queue_, &numbered_, Tag::Row}; }
    // The row of an entry dict left in the tree (at path); throws a ParseError naming the key when
    // it is not one.
    uint32_t fromDict(uint32_t node, const std::string& path);

    // Every row numbered so far is in the columns when it returns (rethrows what appending threw:
    // std::bad_alloc, std::length_error). Rows made after it are appended on the calling thread.
    void finish() { queue_.finish(); }
    TraceColumns& rows() {
        finish();
        return rows_;
    }
    // Keys of trace entries this reader does not read, with how many entries have each (string id
    // -> count): what a view cannot show yet, said rather than dropped.
    const std::vector<std::pair<StringId, uint64_t>>& unknownKeys() const { return unknownKeys_; }

private:
    enum class EntryKey : uint8_t {
        Other, Action, Addr, Size, Stream, DeviceFree, TimeUs, Frames, CompileContext, UserMetadata
    };
    static constexpr size_t kEntryKeys = 10;
    struct Row {
        Action action;
        uint8_t flags;
        StringId actionName;
        uint64_t addr, size, stream;
        int64_t timeUs;
        StackId stack;
        StringId compileContext, userMetadata;
    };
    // A dict's items read as a row: the row, whether it named an action, the first thing wrong
    // (bad: what was expected; badKey) and the first keys the reader does not know.
    struct Parsed {
        Row row;
        bool haveAction = false;
        const char* bad = nullptr;
        StringId badKey = 0;
        StringId unknown[4];
        size_t unknownCount = 0;
    };
    // Inline (defined in TraceRows.cpp, their only user): they run for every trace entry.
    [[gnu::always_inline]] inline void parse(const Value* items, size_t n, Parsed& out);
    // fromItems and fromDict: with path == nullptr returns nullopt on any mismatch, otherwise throws.
    [[gnu::always_inline]] inline std::optional<uint32_t> read(const Value* items, size_t n, const std::string* path);
    static inline bool entryInt(const Value& v, bool negativeOk, uint64_t& out, const char*& bad);
    // The field a str key names (Other for a key this reader does not read, or one not a str).
    EntryKey keyOf(const Value& key) const {
        return key.tag == Tag::Str && key.ref < entryKeys_.size() ? entryKeys_[key.ref] : EntryKey::Other;
    }
    inline Action actionOf(StringId name);
    // The row's number; its fields queued for appendRow (or appended, after finish()).
    [[gnu::always_inline]] inline uint32_t addRow(const Row& r);
    [[gnu::always_inline]] inline void appendRow(const Row& r);
    // The queue's records: a plan's number (odd: plan << 1 | 1) and its holes' values (written by
    // the machine: PickleHooks::planRecords), or 0 and a Row's bytes (kRowWords words).
    static constexpr size_t kRowWords = (sizeof(Row) + 7) / 8;
    void consume(const uint64_t* words, size_t n);
    // A plan's row, and the field each hole's value goes to (Other: a number the reader ignores).
    // At most kMaxPlans of them (a file whose templates are forgotten again and again), of at
    // most the holes the machine plans (PickleHooks::kMaxPlannedHoles).
    static constexpr size_t kMaxPlans = size_t(1) << 16, kMaxPlanHoles = PickleHooks::kMaxPlannedHoles;
    struct Plan {
        Row row;
        std::array<EntryKey, kMaxPlanHoles> field;
        uint8_t holes;
    };
    static_assert(kMaxPlanHoles <= 16, "plan()'s refusedNegative has a bit a hole");
    // The plans in chunks that never move: the appending thread reads them while plan() adds
    // more (planChunks_ is reserved for all of them up front, so never reallocated).
    static constexpr size_t kPlansPerChunk = 1024;
    std::vector<std::unique_ptr<Plan[]>> planChunks_;
    size_t planCount_ = 0;
    const Plan& planAt(size_t i) const { return planChunks_[i / kPlansPerChunk][i % kPlansPerChunk]; }
    // The fixed-width columns' pages are prefaulted kPrefaultRows rows ahead (PickleDocument::
    // prefaultAhead), one mark each: action, flags, addr, size, timeUs, stack; looked at every
    // kPrefaultEvery rows (looked at every row, the six marks cost about 35 instructions a row,
    // a seventh of a replayed row's).
    static constexpr size_t kPrefaultRows = 16384, kPrefaultEvery = 64;
    std::array<size_t, 6> prefaulted_{};
    void prefaultColumns();

    const PickleDocument& doc_;
    TraceColumns rows_;
    std::vector<int8_t> actionCache_;
    std::vector<EntryKey> entryKeys_;  // by string id: which trace entry field a key names
    std::vector<Value> tmpItems_;
    std::vector<std::pair<StringId, uint64_t>> unknownKeys_;  // few: a linear search is the fastest
    void countUnknown(const StringId* keys, size_t n);
    size_t numbered_ = 0;
    // Last: its thread, which appends to rows_ and reads the plans, stops before they go.
    HandoffQueue queue_;
};

} // namespace memlens::model
