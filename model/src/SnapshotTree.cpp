#include "SnapshotTree.h"

#include "memlens/model/ParseError.h"

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <optional>

namespace memlens::model {

namespace {
[[noreturn]] void fail(const std::string& path, const std::string& what) { TreeFields::fail(path, what); }
} // namespace

DeviceData& SnapshotTree::deviceData(int d) {
    auto it = std::lower_bound(snap_.devices.begin(), snap_.devices.end(), d,
                               [](const DeviceData& dd, int v) { return dd.device < v; });
    if (it == snap_.devices.end() || it->device != d) {
        it = snap_.devices.insert(it, DeviceData{});
        it->device = d;
    }
    return *it;
}

void SnapshotTree::readSegment(const Value& sv, const TreePath& path, std::vector<Block>& blocks,
                               bool hostSegment) {
    uint32_t s = fields_.dictNode(sv, path, "a segment");
    // the fields, in one pass over the dict (a real file has tens of thousands of segments)
    enum { Device, Address, TotalSize, Allocated, Active, Requested, Stream, Type, Expandable, PoolId, Frames, Blocks, kFields };
    const StringId keys[kFields] = {k_.device,        k_.address,         k_.total_size, k_.allocated_size,
                                    k_.active_size,   k_.requested_size,  k_.stream,     k_.segment_type,
                                    k_.is_expandable, k_.segment_pool_id, k_.frames,     k_.blocks};
    const Value* f[kFields];
    fields_.fieldsOf(s, keys, f);
    Segment seg;
    if (hostSegment) {
        seg.device = kHostDevice;
    } else {
        uint64_t dev = fields_.intValue(f[Device], k_.device, path, true);
        if (dev > 1u << 16)
            fields_.fail(path.key(k_.device), "device index " + std::to_string(dev) + " is out of range");
        seg.device = static_cast<int>(dev);
    }
    seg.address = fields_.intValue(f[Address], k_.address, path, true);
    seg.totalSize = fields_.intValue(f[TotalSize], k_.total_size, path, true);
    seg.allocatedSize = fields_.intValue(f[Allocated], k_.allocated_size, path, false);
    seg.activeSize = fields_.intValue(f[Active], k_.active_size, path, false);
    seg.requestedSize = fields_.intValue(f[Requested], k_.requested_size, path, false);
    seg.stream = fields_.intValue(f[Stream], k_.stream, path, false);
    if (const Value* t = f[Type]; t && t->tag == Tag::Str) seg.isLarge = t->ref == k_.large;
    if (const Value* e = f[Expandable]; e && e->isInt()) seg.isExpandable = e->bits != 0;
    // a tuple, or a list in memory_viz's JSON form
    if (const Value* p = f[PoolId]; p && (p->tag == Tag::Tuple || p->tag == Tag::List)) {
        std::vector<Value> ids;
        doc_.forEach(p->ref, [&](const Value& x) { ids.push_back(x); });
        if (ids.size() == 2 && ids[0].isInt() && ids[1].isInt()) {
            seg.poolOwner = ids[0].asInt();
            seg.poolId = ids[1].asInt();
        }
    }
    seg.stack = fields_.stackOf(f[Frames], path.key(k_.frames));
    const Value* bl = f[Blocks];
    if (!bl) fields_.fail(path, "missing key 'blocks' (expected a list of block dicts)");
    const TreePath bpath = path.key(k_.blocks);
    auto items = fields_.listItems(*bl, bpath, "block dicts");
    seg.firstBlock = static_cast<uint32_t>(blocks.size());  // in `blocks` until finish() groups them
    seg.blockCount = static_cast<uint32_t>(items.size());
    uint64_t running = seg.address;
    const StringId blockKeys[] = {k_.size, k_.requested_size, k_.state, k_.address, k_.history, k_.frames};
    for (size_t i = 0; i < items.size(); ++i) {
        if (items[i].tag == Tag::Block) {  // read as it completed
            const Block& blk = blockRows_[items[i].ref];
            running = blk.address + blk.size;
            blocks.push_back(blk);
            continue;
        }
        const TreePath p = bpath.index(i);
        uint32_t b = fields_.dictNode(items[i], p, "a block");
        const Value* f[std::size(blockKeys)];
        fields_.fieldsOf(b, blockKeys, f);
        Block blk;
        blk.size = fields_.intValue(f[0], k_.size, p, true);
        blk.requestedSize = fields_.intValue(f[1], k_.requested_size, p, false);
        const Value* st = f[2];
        if (!st) fields_.fail(p, "missing key 'state' (expected 'active_allocated', 'active_pending_free' or 'inactive')");
        if (st->tag != Tag::Str)
            fields_.fail(p.key(k_.state), std::string("expected a str, found a ") + tagName(st->tag));
        const auto state = k_.blockState(st->ref);
        if (!state)
            fields_.fail(p.key(k_.state), "unknown block state '" + std::string(doc_.strings.view(st->ref).substr(0, 60)) + "'");
        blk.state = *state;
        const Value* a = f[3];
        if (a && a->isInt()) {
            blk.address = a->bits;
        } else {
            blk.address = running;  // torch 2.0 blocks have no address
        }
        running = blk.address + blk.size;
        if (const Value* h = f[4]; h && (h->tag == Tag::List)) {
            legacy_ = true;
            std::vector<Value> hist;
            doc_.forEach(h->ref, [&](const Value& x) { hist.push_back(x); });
            if (!hist.empty() && hist[0].tag == Tag::Dict)
                blk.stack = fields_.stackOf(fields_.field(hist[0].ref, k_.frames),
                                            p.key(k_.history).index(0).key(k_.frames));
        } else {
            blk.stack = fields_.stackOf(f[5], p.key(k_.frames));
        }
        blocks.push_back(blk);
    }
    segTmp_.push_back(seg);  // blocks are attached per device in finish()
}

void SnapshotTree::readTraces(const Value* deviceTraces, const Value* hostTraces) {
    TraceColumns& rows = traceRows_.rows();
    // each trace list to read: its device, its path for errors, its list
    struct Source {
        int device;
        std::string path;
        Value list;
    };
    std::vector<Source> sources;
    if (deviceTraces) {
        auto lists = fields_.listItems(*deviceTraces, "device_traces", "per-device trace lists");
        for (size_t d = 0; d < lists.size(); ++d)
            if (lists[d].tag != Tag::None)
                sources.push_back({static_cast<int>(d), "device_traces[" + std::to_string(d) + "]", lists[d]});
    }
    if (hostTraces && hostTraces->tag != Tag::None) {
        auto items = fields_.listItems(*hostTraces, "host_traces", "trace entries");
        bool nested = !items.empty() && items[0].tag == Tag::List;
        if (nested) {
            for (size_t i = 0; i < items.size(); ++i)
                if (items[i].tag != Tag::None)
                    sources.push_back({kHostDevice, "host_traces[" + std::to_string(i) + "]", items[i]});
        } else {
            sources.push_back({kHostDevice, "host_traces", *hostTraces});
        }
    }
    // The common case: one list holds every entry (the others, if any, are empty), in row order.
    // Its device keeps the columns as they are, checked without a copy of the list (16 MB for 4
    // million entries). Anything else is read below, where a wrong list or entry is named.
    const Source* filled = nullptr;
    size_t filledLists = 0;
    bool allLists = true;
    for (const Source& src : sources) {
        allLists = allLists && (src.list.tag == Tag::List || src.list.tag == Tag::Tuple);
        if (allLists && doc_.node(src.list.ref).count > 0) {
            filled = &src;
            ++filledLists;
        }
    }
    if (allLists && filledLists == 1 && doc_.node(filled->list.ref).count == rows.rows() &&
        deviceData(filled->device).trace.rows() == 0) {
        bool inOrder = true;
        uint32_t k = 0;
        doc_.forEach(filled->list.ref, [&](const Value& e) { inOrder = inOrder && e.tag == Tag::Row && e.ref == k++; });
        if (inOrder) {
            for (const Source& src : sources) deviceData(src.device).hasTraceList = true;
            deviceData(filled->device).trace = std::move(rows);
            rows.clear();
            return;
        }
    }
    // rows of all lists, in source order
    std::vector<std::vector<uint32_t>> perSource(sources.size());
    for (size_t i = 0; i < sources.size(); ++i) {
        const std::string& path = sources[i].path;
        uint32_t node = fields_.listNode(sources[i].list, path, "trace entry dicts");  // read in place: it holds every entry
        auto& ids = perSource[i];
        ids.reserve(doc_.node(node).count);
        doc_.forEach(node, [&](const Value& e) {
            if (e.tag == Tag::Row) {
                ids.push_back(e.ref);
            } else if (e.tag == Tag::Dict) {
                std::string p = path + "[" + std::to_string(ids.size()) + "]";
                ids.push_back(traceRows_.fromDict(e.ref, p));
            } else {
                fail(path + "[" + std::to_string(ids.size()) + "]",
                     std::string("expected a trace entry dict, found a ") + tagName(e.tag));
            }
        });
        deviceData(sources[i].device).hasTraceList = true;
    }
    for (size_t i = 0; i < sources.size(); ++i) {
        const auto& ids = perSource[i];
        if (ids.empty()) continue;
        TraceColumns& out = deviceData(sources[i].device).trace;
        out.reserve(out.rows() + ids.size());
        for (uint32_t r : ids) {
            out.action.push_back(rows.action[r]);
            out.actionName.push_back(rows.actionName[r]);
            out.flags.push_back(rows.flags[r]);
            out.addr.push_back(rows.addr[r]);
            out.size.push_back(rows.size[r]);
            out.stream.push_back(rows.stream[r]);
            out.timeUs.push_back(rows.timeUs[r]);
            out.stack.push_back(rows.stack[r]);
            out.compileContext.push_back(rows.compileContext[r]);
            out.userMetadata.push_back(rows.userMetadata[r]);
        }
    }
    rows.clear();
}

// trace_alloc_overflowed / trace_alloc_max_entries (PR #179276): a list indexed by device, a dict
// keyed by device (an int, or "host"), or one value for every CUDA device. Kept until the devices
// are known (applyTraceFlags), so that a flag never makes a device of its own.
void SnapshotTree::readTraceFlags(const Value& holder) {
    if (holder.tag != Tag::Dict) return;
    auto each = [&](StringId key, std::map<int, Value>& out) {
        const Value* v = fields_.field(holder.ref, key);
        if (!v || v->tag == Tag::None) return;
        if (v->tag == Tag::List || v->tag == Tag::Tuple) {
            int d = 0;
            doc_.forEach(v->ref, [&](const Value& x) { out[d++] = x; });
        } else if (v->tag == Tag::Dict) {
            doc_.forEachPair(v->ref, [&](const Value& k, const Value& x) {
                if (k.isInt()) out[static_cast<int>(k.asInt())] = x;
                else if (k.tag == Tag::Str && doc_.strings.view(k.ref) == "host") out[kHostDevice] = x;
            });
        } else {
            out[kAllDevices] = *v;
        }
    };
    each(k_.trace_alloc_overflowed, overflowed_);
    each(k_.trace_alloc_max_entries, maxEntries_);
}

void SnapshotTree::applyTraceFlags() {
    auto valueFor = [](const std::map<int, Value>& m, int device) -> const Value* {
        if (auto it = m.find(device); it != m.end()) return &it->second;
        if (device == kHostDevice) return nullptr;  // one value is the CUDA ring buffer's
        if (auto it = m.find(kAllDevices); it != m.end()) return &it->second;
        return nullptr;
    };
    for (DeviceData& dd : snap_.devices) {
        if (const Value* v = valueFor(overflowed_, dd.device); v && v->isInt()) dd.traceOverflowed = v->bits != 0;
        if (const Value* v = valueFor(maxEntries_, dd.device); v && v->isInt()) dd.traceMaxEntries = v->asInt();
    }
}

void SnapshotTree::readAnnotations(const Value& av) {
    if (av.tag != Tag::List) {
        snap_.warnings.push_back("external_annotations is not a list; ignored");
        return;
    }
    snap_.annotations.reserve(snap_.annotations.size() + doc_.node(av.ref).count);
    size_t i = 0;
    doc_.forEach(av.ref, [&](const Value& v) {
        ++i;
        if (v.tag == Tag::Annotation) {  // read as it completed
            snap_.annotations.push_back(annotationRows_[v.ref]);
            return;
        }
        if (v.tag != Tag::Dict) return;
        const Value* st = fields_.field(v.ref, k_.stage);
        const Value* nm = fields_.field(v.ref, k_.name);
        if (!st || st->tag != Tag::Str || !nm || nm->tag != Tag::Str) {
            snap_.warnings.push_back("external_annotations[" + std::to_string(i - 1) + "] has no stage or name; ignored");
            return;
        }
        snap_.annotations.push_back(AnnotationRows::make(doc_.strings, *st, *nm, fields_.field(v.ref, k_.device),
                                                         fields_.field(v.ref, k_.time_us)));
    });
}

void SnapshotTree::readSettings(const Value& sv) {
    if (sv.tag != Tag::Dict) return;
    doc_.forEachPair(sv.ref, [&](const Value& k, const Value& v) {
        snap_.allocatorSettings.emplace_back(fields_.toText(k, 0), fields_.toText(v, 0));
    });
}

void SnapshotTree::noteUnknownKeys(const Value& root) {
    for (const auto& [key, count] : traceRows_.unknownKeys())
        snap_.notes.push_back(std::to_string(count) + " trace entries carry '" + std::string(doc_.strings.view(key).substr(0, 60)) +
                              "', which memlens reads past and does not show yet");
    if (root.tag != Tag::Dict) return;
    const StringId known[] = {k_.segments, k_.device_traces, k_.allocator_settings, k_.external_annotations,
                              k_.host_segments, k_.host_traces, k_.trace_alloc_overflowed, k_.trace_alloc_max_entries};
    doc_.forEachPair(root.ref, [&](const Value& k, const Value&) {
        if (k.tag == Tag::Str && std::find(std::begin(known), std::end(known), k.ref) != std::end(known)) return;
        snap_.notes.push_back("the snapshot has a top-level '" + fields_.toText(k, 0).substr(0, 60) +
                              "', which memlens does not read yet");
    });
}

void SnapshotTree::checkInvariants() {
    for (const auto& dd : snap_.devices) {
        for (size_t i = 0; i < dd.segments.size(); ++i) {
            const Segment& s = dd.segments[i];
            uint64_t sum = 0, alloc = 0, active = 0;
            uint64_t expect = s.address;
            bool contiguous = true;
            for (uint32_t b = s.firstBlock; b < s.firstBlock + s.blockCount; ++b) {
                const Block& blk = dd.blocks[b];
                sum += blk.size;
                if (blk.address != expect) contiguous = false;
                expect = blk.address + blk.size;
                if (blk.state == BlockState::ActiveAllocated) alloc += blk.size;
                if (blk.state != BlockState::Inactive) active += blk.size;
            }
            auto where = deviceName(dd.device) + " segment at 0x" + [&] {
                char buf[32];
                std::snprintf(buf, sizeof buf, "%llx", static_cast<unsigned long long>(s.address));
                return std::string(buf);
            }();
            if (sum != s.totalSize)
                snap_.warnings.push_back(where + ": block sizes add up to " + std::to_string(sum) + ", total_size is " +
                                        std::to_string(s.totalSize));
            if (!contiguous) snap_.warnings.push_back(where + ": blocks are not contiguous");
            if (alloc != s.allocatedSize)
                snap_.warnings.push_back(where + ": allocated blocks add up to " + std::to_string(alloc) +
                                        ", allocated_size is " + std::to_string(s.allocatedSize));
            if (active != s.activeSize)
                snap_.warnings.push_back(where + ": active blocks add up to " + std::to_string(active) +
                                        ", active_size is " + std::to_string(s.activeSize));
            if (i > 0 && dd.segments[i - 1].address + dd.segments[i - 1].totalSize > s.address)
                snap_.warnings.push_back(where + ": overlaps the previous segment");
        }
    }
}

void SnapshotTree::finish(Value root, int protocol, uint64_t fileBytes, const LoadOptions& options) {
    snap_.pickleProtocol = protocol;
    snap_.fileBytes = fileBytes;
    Value segments;
    std::optional<Value> hostSegments;
    if (root.tag == Tag::List) {
        snap_.layout = Layout::BareSegmentList;
        segments = root;
    } else if (root.tag == Tag::Dict) {
        const Value* s = fields_.field(root.ref, k_.segments);
        if (!s) {
            std::string keys;
            int n = 0;
            doc_.forEachPair(root.ref, [&](const Value& k, const Value&) {
                if (n++ >= 4) return;
                keys += (keys.empty() ? "" : ", ") + ("'" + fields_.toText(k, 7).substr(0, 40) + "'");
            });
            fail("top level",
                 "not a PyTorch memory snapshot: the dict has no 'segments' key (it has " +
                     (keys.empty() ? std::string("no keys") : keys + (n > 4 ? ", ..." : "")) +
                     "); expected the output of torch.cuda.memory._dump_snapshot()");
        }
        segments = *s;
        const Value* t = fields_.field(root.ref, k_.device_traces);
        const Value* ht = fields_.field(root.ref, k_.host_traces);
        if ((t && t->tag != Tag::None) || ht) readTraces(t && t->tag != Tag::None ? t : nullptr, ht);
        if (const Value* a = fields_.field(root.ref, k_.external_annotations); a) readAnnotations(*a);
        if (const Value* a = fields_.field(root.ref, k_.allocator_settings); a) {
            readSettings(*a);
            readTraceFlags(*a);
        }
        readTraceFlags(root);  // the flags at the top level, if a writer puts them there
        if (const Value* h = fields_.field(root.ref, k_.host_segments); h && h->tag != Tag::None) hostSegments = *h;
    } else {
        fail("top level", std::string("not a PyTorch memory snapshot: the pickle holds a ") + tagName(root.tag) +
                              ", expected a dict with 'segments' and 'device_traces', or a list of segments");
    }
    if (options.progress) options.progress("building", 0.5);
    auto segItems = fields_.listItems(segments, root.tag == Tag::List ? "top level" : "segments", "segment dicts");
    segTmp_.reserve(segItems.size());
    const TreePath segmentsPath(root.tag == Tag::List ? "" : "segments");
    std::vector<Block> blocks;  // every segment's, in file order
    {
        size_t count = 0;
        for (const Value& sv : segItems)
            if (sv.tag == Tag::Dict)
                if (const Value* bl = fields_.field(sv.ref, k_.blocks); bl && (bl->tag == Tag::List || bl->tag == Tag::Tuple))
                    count += doc_.node(bl->ref).count;
        blocks.reserve(count);
    }
    for (size_t i = 0; i < segItems.size(); ++i) {
        if (options.cancel && options.cancel->load(std::memory_order_relaxed)) throw Cancelled();
        readSegment(segItems[i], segmentsPath.index(i), blocks);
    }
    if (hostSegments) {
        auto hostItems = fields_.listItems(*hostSegments, "host_segments", "segment dicts");
        const TreePath hostPath("host_segments");
        for (size_t i = 0; i < hostItems.size(); ++i)
            readSegment(hostItems[i], hostPath.index(i), blocks, true);
    }
    if (legacy_ && snap_.layout == Layout::Dict) snap_.layout = Layout::Legacy20;
    // group segments by device, in address order
    std::vector<size_t> order(segTmp_.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
        return segTmp_[a].device != segTmp_[b].device ? segTmp_[a].device < segTmp_[b].device
                                                      : segTmp_[a].address < segTmp_[b].address;
    });
    const bool inPlace = !segTmp_.empty() && std::is_sorted(order.begin(), order.end()) &&
                         segTmp_.front().device == segTmp_.back().device &&
                         deviceData(segTmp_.front().device).segments.empty();
    if (inPlace) {  // one device, segments in address order: the blocks stay where they are
        DeviceData& dd = deviceData(segTmp_.front().device);
        dd.blocks = std::move(blocks);
        dd.segments = std::move(segTmp_);
    } else {
        // room first: 40,000 segments would grow the vectors by copies
        std::map<int, std::pair<size_t, size_t>> need;  // device -> segments, blocks
        for (const Segment& seg : segTmp_) {
            auto& n = need[seg.device];
            n.first += 1;
            n.second += seg.blockCount;
        }
        for (const auto& [device, n] : need) {
            DeviceData& dd = deviceData(device);
            dd.segments.reserve(dd.segments.size() + n.first);
            dd.blocks.reserve(dd.blocks.size() + n.second);
        }
        for (size_t i : order) {
            Segment seg = segTmp_[i];
            DeviceData& dd = deviceData(seg.device);
            const auto first = blocks.begin() + seg.firstBlock;
            seg.firstBlock = static_cast<uint32_t>(dd.blocks.size());
            dd.blocks.insert(dd.blocks.end(), first, first + seg.blockCount);
            dd.segments.push_back(seg);
        }
    }
    applyTraceFlags();
    noteUnknownKeys(root);
    checkInvariants();
    if (options.progress) options.progress("building", 1.0);
}

} // namespace memlens::model
