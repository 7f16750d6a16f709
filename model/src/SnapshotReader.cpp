#include "memlens/model/SnapshotReader.h"

#include "SnapshotHooks.h"
#include "JsonSnapshot.h"
#include "SnapshotKeys.h"
#include "SnapshotTree.h"

#include "memlens/model/ByteReader.h"
#include "memlens/model/ParseError.h"
#include "memlens/model/PickleDocument.h"
#include "memlens/model/PickleMachine.h"

#include <cstring>

// A snapshot is read in two steps: the pickle machine runs the file with SnapshotHooks collapsing
// frames, stacks and trace entries as they complete (FrameTable, FrameRunCache, TraceRows), then
// SnapshotTree builds the Snapshot from what is left (segments, blocks, per-device traces).

namespace memlens::model {

namespace {

// What the first bytes say when the file is no snapshot pickle at all.
void sniff(ByteReader& in) {
    auto head = in.peek(8);
    if (head.empty()) throw ParseError(0, "empty file; expected a PyTorch memory snapshot pickle");
    size_t i = 0;
    while (i < head.size() && (head[i] == ' ' || head[i] == '\n' || head[i] == '\r' || head[i] == '\t')) ++i;
    if (head.size() >= 4 && head[0] == 'P' && head[1] == 'K' && head[2] == 3 && head[3] == 4)
        throw ParseError(0, "this is a zip archive (a torch.save() file?), not a memory snapshot pickle");
    if (head.size() >= 2 && head[0] == 0x1f && head[1] == 0x8b)
        throw ParseError(0, "this is gzip-compressed twice (or gzip bytes in memory); decompress it once first");
    if (head.size() == 8 && std::memcmp(head.data(), "SQLite f", 8) == 0)
        throw ParseError(0, "this is a memlens session (SQLite), not a snapshot pickle; open it in memlens, or list "
                            "its snapshots with `memlens-cli session FILE` and write one out with `memlens-cli export`");
    if (head[0] == 0x80 && head.size() >= 2 && (head[1] < 2 || head[1] > 5))
        throw ParseError(1, "pickle protocol " + std::to_string(head[1]) + " is not supported (2 to 5 are)");
}

// memory_viz's JSON form: the first byte past any white space opens an object or an array
bool isJson(ByteReader& in) {
    auto head = in.peek(64);
    size_t i = 0;
    while (i < head.size() && (head[i] == ' ' || head[i] == '\n' || head[i] == '\r' || head[i] == '\t')) ++i;
    return i < head.size() && (head[i] == '{' || head[i] == '[');
}

Snapshot readFrom(ByteReader& in, const LoadOptions& options);

// The JSON is turned into pickle bytes on the read-ahead thread of a second reader while this
// thread parses them: memory holds a few MiB of the converted pickle at a time, not all of it.
Snapshot readJson(ByteReader& in, const LoadOptions& options) {
    Snapshot snap;
    {
        ByteReader converted([&in, &options](const ByteReader::Sink& sink) { jsonSnapshotToPickle(in, options, sink); },
                             in.sizeKnown() ? in.size() : in.sizeHint(), "JSON");
        LoadOptions rest = options;
        rest.progress = nullptr;  // the JSON's reading reports the progress (on the producer's thread)
        snap = readFrom(converted, rest);
    }  // the producer has ended (or was stopped) here: `in` is ours again
    snap.fileBytes = in.offset();
    snap.pickleProtocol = 0;  // not a pickle
    return snap;
}

Snapshot readFrom(ByteReader& in, const LoadOptions& options) {
    if (isJson(in)) return readJson(in, options);
    sniff(in);
    PickleDocument doc;
    const SnapshotKeys keys(doc.strings);
    Snapshot snap;
    SnapshotHooks hooks(doc, keys, snap, in.sizeHint());
    Value root;
    int protocol = 0;
    {  // the machine's memo (8 bytes a memoised value) is gone before the tree is built
        PickleLimits limits;
        limits.wholeDicts = options.wholeDicts;
        limits.dictTemplates = options.dictTemplates;
        PickleMachine machine(in, doc, &hooks, limits);
        PickleMachine::Progress progress;
        if (options.progress)
            progress = [&](uint64_t off, uint64_t size) {
                options.progress("reading", size ? static_cast<double>(off) / static_cast<double>(size) : 1.0);
            };
        root = machine.run(progress, options.cancel);
        protocol = machine.protocol();
        snap.dictsReplayed = machine.dictsReplayed();
    }
    hooks.traceRows().finish();  // the rows appended on its second thread are all there
    if (options.progress) options.progress("reading", 1.0);
    SnapshotTree(doc, keys, hooks.traceRows(), hooks.blockRows(), hooks.annotationRows(), snap)
        .finish(root, protocol, in.sizeKnown() ? in.size() : in.offset(), options);
    snap.strings = std::move(doc.strings);
    return snap;
}

} // namespace

Snapshot readSnapshotFile(const std::string& path, const LoadOptions& options) {
    ByteReader in(path);
    return readFrom(in, options);
}

Snapshot readSnapshotMemory(std::span<const uint8_t> bytes, const LoadOptions& options) {
    ByteReader in(bytes);
    return readFrom(in, options);
}

} // namespace memlens::model
