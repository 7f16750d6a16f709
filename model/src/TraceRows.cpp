#include "TraceRows.h"

#include "memlens/model/ParseError.h"

#include <algorithm>
#include <iterator>

namespace memlens::model {

TraceRows::TraceRows(const PickleDocument& doc, const SnapshotKeys& k, uint64_t fileBytes) : doc_(doc) {
    std::pair<StringId, EntryKey> keys[] = {
        {k.action, EntryKey::Action},       {k.addr, EntryKey::Addr},
        {k.size, EntryKey::Size},           {k.stream, EntryKey::Stream},
        {k.device_free, EntryKey::DeviceFree}, {k.time_us, EntryKey::TimeUs},
        {k.frames, EntryKey::Frames},       {k.compile_context, EntryKey::CompileContext},
        {k.user_metadata, EntryKey::UserMetadata}};
    for (auto [id, which] : keys) {
        if (id >= entryKeys_.size()) entryKeys_.resize(id + 1, EntryKey::Other);
        entryKeys_[id] = which;
    }
    rows_.reserve(static_cast<size_t>(std::min<uint64_t>(fileBytes / 48 + 64, uint64_t(1) << 28)));
}

// An integer field of a trace entry: true when one is given (None stands for "not given"); on a
// mismatch sets bad to what was expected.
bool TraceRows::entryInt(const Value& v, bool negativeOk, uint64_t& out, const char*& bad) {
    if (v.tag == Tag::None) return false;
    if (v.tag != Tag::Int && v.tag != Tag::UInt) {
        bad = "an int";
        return false;
    }
    if (!negativeOk && v.tag == Tag::Int && v.asInt() < 0) {
        bad = "a non-negative int";
        return false;
    }
    out = v.bits;
    return true;
}

std::optional<uint32_t> TraceRows::read(const Value* items, size_t n, const std::string* path) {
    Action act = Action::Other;
    StringId actName = 0;
    bool haveAction = false;
    uint8_t flags = 0;
    uint64_t addr = 0, size = 0, stream = 0, deviceFree = 0;
    int64_t time = -1;
    StackId stack = 0;
    StringId cc = 0, um = 0;
    StringId unknown[4];
    size_t unknownCount = 0;
    const char* bad = nullptr;
    StringId badKey = 0;
    for (size_t i = 0; i + 1 < n && !bad; i += 2) {
        const Value& kv = items[i];
        const Value& v = items[i + 1];
        if (kv.tag != Tag::Str) continue;  // foreign keys are ignored
        EntryKey which = kv.ref < entryKeys_.size() ? entryKeys_[kv.ref] : EntryKey::Other;
        switch (which) {
        case EntryKey::Action:
            if (v.tag != Tag::Str) {
                bad = "a str";
                break;
            }
            actName = v.ref;
            act = actionOf(v.ref);
            haveAction = true;
            break;
        case EntryKey::Addr:
            if (entryInt(v, false, addr, bad)) flags |= TraceColumns::HasAddr;
            break;
        case EntryKey::Size: entryInt(v, false, size, bad); break;
        case EntryKey::Stream: entryInt(v, false, stream, bad); break;
        case EntryKey::DeviceFree:
            if (entryInt(v, false, deviceFree, bad)) flags |= TraceColumns::HasDeviceFree;
            break;
        case EntryKey::TimeUs: {
            uint64_t t;
            if (entryInt(v, true, t, bad)) {
                time = static_cast<int64_t>(t);
                flags |= TraceColumns::HasTime;
            }
            break;
        }
        case EntryKey::Frames:
            if (v.tag == Tag::Stack) {
                stack = v.ref;
                flags |= TraceColumns::HasFrames;
            } else if (v.tag == Tag::List && doc_.node(v.ref).count == 0) {
                flags |= TraceColumns::HasFrames;
            } else if (v.tag != Tag::None) {
                bad = "a list of frame dicts";
            }
            break;
        case EntryKey::CompileContext:
            if (v.tag == Tag::Str) cc = v.ref;
            break;
        case EntryKey::UserMetadata:
            if (v.tag == Tag::Str) um = v.ref;
            break;
        case EntryKey::Other:
            if (unknownCount < std::size(unknown)) unknown[unknownCount++] = kv.ref;
            break;
        }
        if (bad) badKey = kv.ref;
    }
    if (!haveAction && !bad) {
        if (!path) return std::nullopt;
        throw ParseError(ParseError::kNoOffset, *path, "missing key 'action' (expected a str)");
    }
    if (bad) {
        if (!path) return std::nullopt;
        throw ParseError(ParseError::kNoOffset, *path + "['" + std::string(doc_.strings.view(badKey)) + "']",
                         std::string("expected ") + bad);
    }
    if (act == Action::Oom && !(flags & TraceColumns::HasAddr) && (flags & TraceColumns::HasDeviceFree))
        addr = deviceFree;
    if (unknownCount) [[unlikely]]
        countUnknown(unknown, unknownCount);
    // the action's text is kept only where the reader does not know the action
    return appendRow({act, act == Action::Other ? actName : StringTable::kEmpty, flags, addr, size, stream, time, stack, cc, um});
}

void TraceRows::countUnknown(const StringId* keys, size_t n) {
    for (size_t i = 0; i < n; ++i) {
        auto it = std::find_if(unknownKeys_.begin(), unknownKeys_.end(), [&](const auto& p) { return p.first == keys[i]; });
        if (it != unknownKeys_.end()) ++it->second;
        else if (unknownKeys_.size() < 64) unknownKeys_.emplace_back(keys[i], 1);
    }
}

Action TraceRows::actionOf(StringId name) {
    if (name >= actionCache_.size()) actionCache_.resize(name + 1, -1);
    if (actionCache_[name] < 0) actionCache_[name] = static_cast<int8_t>(actionFromName(doc_.strings.view(name)));
    return static_cast<Action>(actionCache_[name]);
}

// Flattened: a row per trace entry makes these pushes hot, and left to itself the compiler calls
// each one out of line.
[[gnu::flatten]] uint32_t TraceRows::appendRow(const Row& r) {
    auto& t = rows_;
    t.action.push_back(r.action);
    t.actionName.push_back(r.actionName);
    t.flags.push_back(r.flags);
    t.addr.push_back(r.addr);
    t.size.push_back(r.size);
    t.stream.push_back(r.stream);
    t.timeUs.push_back(r.timeUs);
    t.stack.push_back(r.stack);
    t.compileContext.push_back(r.compileContext);
    t.userMetadata.push_back(r.userMetadata);
    doc_.prefaultAhead(t.action, prefaulted_[0], kPrefaultRows);
    doc_.prefaultAhead(t.flags, prefaulted_[1], kPrefaultRows);
    doc_.prefaultAhead(t.addr.bytes(), prefaulted_[2], kPrefaultRows);
    doc_.prefaultAhead(t.size.bytes(), prefaulted_[3], kPrefaultRows);
    doc_.prefaultAhead(t.timeUs.bytes(), prefaulted_[4], kPrefaultRows);
    doc_.prefaultAhead(t.stack.bytes(), prefaulted_[5], kPrefaultRows);
    return static_cast<uint32_t>(t.rows() - 1);
}

bool TraceRows::fromItems(const Value* items, size_t n, uint32_t& row) {
    const auto r = read(items, n, nullptr);
    if (r) row = *r;
    return r.has_value();
}

uint32_t TraceRows::fromDict(uint32_t node, const std::string& path) {
    tmpItems_.clear();
    doc_.forEach(node, [&](const Value& x) { tmpItems_.push_back(x); });
    return *read(tmpItems_.data(), tmpItems_.size(), &path);
}

} // namespace memlens::model
