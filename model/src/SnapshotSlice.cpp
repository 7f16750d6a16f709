#include "memlens/model/SnapshotSlice.h"

#include "PickleEmitter.h"

#include "memlens/model/AllocatorState.h"

#include <cctype>
#include <cstdlib>
#include <stdexcept>
#include <unordered_map>

namespace memlens::model {

namespace {

class SliceWriter {
public:
    SliceWriter(const Snapshot& s) : s_(s) {}

    // A frames list: each frame dict written once, then fetched from the memo (as torch shares them).
    void frames(StackId stack) {
        e_.beginList();
        const size_t n = s_.stackSize(stack);
        if (n == 0) return;
        e_.mark();
        for (size_t i = 0; i < n; ++i) frame(s_.stackBegin(stack)[i]);
        e_.appends();
    }

    void frame(FrameId f) {
        if (auto it = frameMemo_.find(f); it != frameMemo_.end()) return e_.get(it->second);
        const Frame& fr = s_.frames[f];
        e_.beginDict();
        e_.mark();
        e_.str("name");
        e_.str(s_.str(fr.name));
        e_.str("filename");
        e_.str(s_.str(fr.filename));
        e_.str("line");
        if (fr.lineKnown) e_.unsignedInteger(fr.line);
        else e_.integer(-1);
        const std::pair<const char*, StringId> fx[] = {{"fx_node_op", fr.fxOp},
                                                       {"fx_node_name", fr.fxName},
                                                       {"fx_node_target", fr.fxTarget},
                                                       {"fx_original_trace", fr.fxOriginalTrace}};
        for (const auto& [key, id] : fx)
            if (id) {
                e_.str(key);
                e_.str(s_.str(id), false);
            }
        e_.setItems();
        frameMemo_.emplace(f, e_.put());
    }

    // allocator_settings are kept as text: each value goes back to the type its text shows
    void settingValue(const std::string& v) {
        if (v == "True" || v == "False") return e_.boolean(v == "True");
        if (v == "None") return e_.none();
        char* end = nullptr;
        if (!v.empty()) {
            const long long i = std::strtoll(v.c_str(), &end, 10);
            if (end && *end == '\0') return e_.integer(i);
            const double d = std::strtod(v.c_str(), &end);
            if (end && *end == '\0') return e_.real(d);
        }
        if (v.size() >= 2 && v.front() == '{' && v.back() == '}') return dictOfInts(v);
        e_.str(v, false);
    }

    // "{1: 0, 2: 4}" (roundup_power2_divisions): string keys, int values, as torch writes them
    void dictOfInts(const std::string& v) {
        e_.beginDict();
        size_t i = 1;
        bool any = false;
        while (i < v.size() - 1) {
            const size_t colon = v.find(':', i), comma = std::min(v.find(',', i), v.size() - 1);
            if (colon == std::string::npos || colon > comma) break;
            auto trim = [](std::string t) {
                while (!t.empty() && std::isspace(static_cast<unsigned char>(t.front()))) t.erase(t.begin());
                while (!t.empty() && std::isspace(static_cast<unsigned char>(t.back()))) t.pop_back();
                return t;
            };
            if (!any) e_.mark();
            any = true;
            e_.str(trim(v.substr(i, colon - i)));
            e_.integer(std::strtoll(trim(v.substr(colon + 1, comma - colon - 1)).c_str(), nullptr, 10));
            i = comma + 1;
        }
        if (any) e_.setItems();
    }

    PickleEmitter e_;

private:
    const Snapshot& s_;
    std::unordered_map<FrameId, uint32_t> frameMemo_;
};

const char* stateName(StateBlockKind k) {
    switch (k) {
    case StateBlockKind::Allocated:
    case StateBlockKind::BeforeRecording: return "active_allocated";
    case StateBlockKind::PendingFree: return "active_pending_free";
    case StateBlockKind::Free: break;
    }
    return "inactive";
}

} // namespace

std::string sliceSnapshot(const Snapshot& snapshot, int device, int64_t from, int64_t to, SliceInfo* info) {
    if (device == kHostDevice)
        throw std::invalid_argument("the pinned host memory cannot be sliced yet: memory_viz has no form for it");
    const DeviceData* dd = snapshot.device(device);
    if (!dd) throw std::invalid_argument("no such device in this snapshot: " + deviceName(device));
    const TraceColumns& t = dd->trace;
    const int64_t n = static_cast<int64_t>(t.rows());
    if (n == 0) throw std::invalid_argument(deviceName(device) + " has no trace entries to slice");
    if (from < 0 || to >= n || from > to)
        throw std::invalid_argument("the range " + std::to_string(from) + ".." + std::to_string(to) +
                                    " is not inside the trace of " + deviceName(device) + " (entries 0.." +
                                    std::to_string(n - 1) + ", from <= to)");
    const StateHistory history(snapshot, device);
    const DeviceState st = history.stateAfter(to);

    SliceWriter w(snapshot);
    PickleEmitter& e = w.e_;
    e.beginDict();
    e.mark();
    // segments: the state right after `to`
    e.str("segments");
    e.beginList();
    if (!st.segments.empty()) {
        e.mark();
        for (const StateSegment& seg : st.segments) {
            uint64_t allocated = 0, active = 0, requested = 0;
            for (const StateBlock& b : seg.blocks) {
                if (b.kind == StateBlockKind::Free) continue;
                active += b.size;
                requested += b.requestedSize;
                if (b.kind != StateBlockKind::PendingFree) allocated += b.size;
            }
            e.beginDict();
            e.mark();
            e.str("device");
            e.integer(device);
            e.str("address");
            e.unsignedInteger(seg.address);
            e.str("total_size");
            e.unsignedInteger(seg.totalSize);
            e.str("allocated_size");
            e.unsignedInteger(allocated);
            e.str("active_size");
            e.unsignedInteger(active);
            e.str("requested_size");
            e.unsignedInteger(requested);
            e.str("stream");
            e.unsignedInteger(seg.stream);
            e.str("segment_type");
            e.str(seg.isLarge ? "large" : "small");
            e.str("segment_pool_id");
            e.integer(seg.pool.owner);
            e.integer(seg.pool.id);
            e.tuple2();
            e.str("is_expandable");
            e.boolean(seg.isExpandable);
            e.str("frames");
            e.beginList();
            e.str("blocks");
            e.beginList();
            if (!seg.blocks.empty()) {
                e.mark();
                for (const StateBlock& b : seg.blocks) {
                    e.beginDict();
                    e.mark();
                    e.str("address");
                    e.unsignedInteger(b.address);
                    e.str("size");
                    e.unsignedInteger(b.size);
                    e.str("requested_size");
                    e.unsignedInteger(b.kind == StateBlockKind::Free ? 0 : b.requestedSize);
                    e.str("state");
                    e.str(stateName(b.kind));
                    e.str("frames");
                    w.frames(b.kind == StateBlockKind::Free ? 0 : b.stack);
                    e.setItems();
                }
                e.appends();
            }
            e.setItems();
        }
        e.appends();
    }
    // device_traces: empty lists for the devices below, then the range
    e.str("device_traces");
    e.beginList();
    e.mark();
    for (int d = 0; d < device; ++d) e.beginList();
    e.beginList();
    e.mark();
    for (int64_t i = from; i <= to; ++i) {
        const auto k = static_cast<size_t>(i);
        e.beginDict();
        e.mark();
        e.str("action");
        e.str(t.action[k] == Action::Other ? snapshot.str(t.actionName[k]) : std::string_view(actionName(t.action[k])));
        if (t.action[k] == Action::Oom) {
            e.str("device_free");
            e.unsignedInteger(t.addr[k]);
        } else if (t.flags[k] & TraceColumns::HasAddr) {
            e.str("addr");
            e.unsignedInteger(t.addr[k]);
        }
        e.str("size");
        e.unsignedInteger(t.size[k]);
        e.str("stream");
        e.unsignedInteger(t.stream[k]);
        if (t.flags[k] & TraceColumns::HasTime) {
            e.str("time_us");
            e.integer(t.timeUs[k]);
        }
        e.str("compile_context");
        e.str(t.compileContext[k] ? snapshot.str(t.compileContext[k]) : std::string_view("N/A"));
        e.str("user_metadata");
        e.str(snapshot.str(t.userMetadata[k]));
        e.str("frames");
        w.frames(t.stack[k]);
        e.setItems();
    }
    e.appends();
    e.appends();
    // allocator_settings, as the snapshot has them
    e.str("allocator_settings");
    e.beginDict();
    if (!snapshot.allocatorSettings.empty()) {
        e.mark();
        for (const auto& [key, value] : snapshot.allocatorSettings) {
            e.str(key);
            w.settingValue(value);
        }
        e.setItems();
    }
    // external_annotations inside the range (by time; the device's own)
    e.str("external_annotations");
    e.beginList();
    size_t annotations = 0;
    const bool timed = (t.flags[static_cast<size_t>(from)] & TraceColumns::HasTime) &&
                       (t.flags[static_cast<size_t>(to)] & TraceColumns::HasTime);
    if (timed) {
        const int64_t t0 = t.timeUs[static_cast<size_t>(from)], t1 = t.timeUs[static_cast<size_t>(to)];
        bool open = false;
        for (const Annotation& a : snapshot.annotations) {
            if (a.device != device || a.timeUs < t0 || a.timeUs > t1) continue;
            if (!open) e.mark();
            open = true;
            e.beginDict();
            e.mark();
            e.str("name");
            e.str(snapshot.str(a.name));
            e.str("stage");
            e.str(a.start ? "START" : "END");
            e.str("device");
            e.integer(a.device);
            e.str("time_us");
            e.integer(a.timeUs);
            e.setItems();
            ++annotations;
        }
        if (open) e.appends();
    }
    e.setItems();
    if (info) *info = {to - from + 1, st.segments.size(), annotations};
    return e.finish();
}

} // namespace memlens::model
