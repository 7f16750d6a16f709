#include "TraceRows.h"

#include "memlens/model/ParseError.h"

#include <algorithm>
#include <cstring>
#include <iterator>

namespace memlens::model {

TraceRows::TraceRows(const PickleDocument& doc, const SnapshotKeys& k, uint64_t fileBytes)
    : doc_(doc), queue_([this](const uint64_t* words, size_t n) { consume(words, n); }) {
    planChunks_.reserve(kMaxPlans / kPlansPerChunk);
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

void TraceRows::parse(const Value* items, size_t n, Parsed& out) {
    Row& r = out.row;
    r = Row{Action::Other, 0, StringTable::kEmpty, 0, 0, 0, -1, 0, 0, 0};
    StringId actName = 0;
    uint64_t deviceFree = 0;
    const char* bad = nullptr;
    for (size_t i = 0; i + 1 < n && !bad; i += 2) {
        const Value& kv = items[i];
        const Value& v = items[i + 1];
        if (kv.tag != Tag::Str) continue;  // foreign keys are ignored
        const EntryKey which = keyOf(kv);
        switch (which) {
        case EntryKey::Action:
            if (v.tag != Tag::Str) {
                bad = "a str";
                break;
            }
            actName = v.ref;
            r.action = actionOf(v.ref);
            out.haveAction = true;
            break;
        case EntryKey::Addr:
            if (entryInt(v, false, r.addr, bad)) r.flags |= TraceColumns::HasAddr;
            break;
        case EntryKey::Size: entryInt(v, false, r.size, bad); break;
        case EntryKey::Stream: entryInt(v, false, r.stream, bad); break;
        case EntryKey::DeviceFree:
            if (entryInt(v, false, deviceFree, bad)) r.flags |= TraceColumns::HasDeviceFree;
            break;
        case EntryKey::TimeUs: {
            uint64_t t;
            if (entryInt(v, true, t, bad)) {
                r.timeUs = static_cast<int64_t>(t);
                r.flags |= TraceColumns::HasTime;
            }
            break;
        }
        case EntryKey::Frames:
            if (v.tag == Tag::Stack) {
                r.stack = v.ref;
                r.flags |= TraceColumns::HasFrames;
            } else if (v.tag == Tag::List && doc_.node(v.ref).count == 0) {
                r.flags |= TraceColumns::HasFrames;
            } else if (v.tag != Tag::None) {
                bad = "a list of frame dicts";
            }
            break;
        case EntryKey::CompileContext:
            if (v.tag == Tag::Str) r.compileContext = v.ref;
            break;
        case EntryKey::UserMetadata:
            if (v.tag == Tag::Str) r.userMetadata = v.ref;
            break;
        case EntryKey::Other:
            if (out.unknownCount < std::size(out.unknown)) out.unknown[out.unknownCount++] = kv.ref;
            break;
        }
        if (bad) {
            out.bad = bad;
            out.badKey = kv.ref;
        }
    }
    if (r.action == Action::Oom && !(r.flags & TraceColumns::HasAddr) && (r.flags & TraceColumns::HasDeviceFree))
        r.addr = deviceFree;
    // the action's text is kept only where the reader does not know the action
    if (r.action == Action::Other) r.actionName = actName;
}

std::optional<uint32_t> TraceRows::read(const Value* items, size_t n, const std::string* path) {
    Parsed e;
    parse(items, n, e);
    if (!e.haveAction && !e.bad) {
        if (!path) return std::nullopt;
        throw ParseError(ParseError::kNoOffset, *path, "missing key 'action' (expected a str)");
    }
    if (e.bad) {
        if (!path) return std::nullopt;
        throw ParseError(ParseError::kNoOffset, *path + "['" + std::string(doc_.strings.view(e.badKey)) + "']",
                         std::string("expected ") + e.bad);
    }
    if (e.unknownCount) [[unlikely]]
        countUnknown(e.unknown, e.unknownCount);
    return addRow(e.row);
}

int32_t TraceRows::plan(const Value* items, size_t n, const uint8_t* holeItems, size_t holes,
                        uint16_t& refusedNegative) {
    if (planCount_ >= kMaxPlans || holes > kMaxPlanHoles) return -1;
    Parsed e;
    parse(items, n, e);
    // only a plain row: no unknown key to count, no oom (whose address may be its device_free)
    if (!e.haveAction || e.bad || e.unknownCount || e.row.action == Action::Oom) return -1;
    // each field given once, so that a hole is the only value of its field
    uint32_t seen = 0;
    for (size_t i = 0; i + 1 < n; i += 2) {
        if (items[i].tag != Tag::Str) continue;
        const auto which = static_cast<uint32_t>(keyOf(items[i]));
        if (seen & (uint32_t(1) << which)) return -1;
        seen |= uint32_t(1) << which;
    }
    Plan plan{e.row, {}, static_cast<uint8_t>(holes)};
    uint16_t nonNegative = 0;  // bit h: hole h must not be negative (parse()'s entryInt)
    for (size_t h = 0; h < holes; ++h) {
        const size_t i = holeItems[h];
        if (i % 2 == 0 || i >= n) return -1;  // a key: not a field's value
        const Value& key = items[i - 1];
        const Value& v = items[i];
        EntryKey which = keyOf(key);
        // a number where the reader ignores one (a foreign key, compile_context, user_metadata)
        if (which == EntryKey::Other || which == EntryKey::CompileContext || which == EntryKey::UserMetadata)
            which = EntryKey::Other;
        const bool number = v.tag == Tag::Int || v.tag == Tag::UInt;
        const bool numberField = which == EntryKey::Addr || which == EntryKey::Size || which == EntryKey::Stream ||
                                 which == EntryKey::DeviceFree || which == EntryKey::TimeUs;
        if (number ? !(numberField || which == EntryKey::Other) : !(v.tag == Tag::Stack && which == EntryKey::Frames))
            return -1;
        plan.field[h] = which;
        // parse()'s entryInt: a negative number only for time_us
        if (number && which != EntryKey::Other && which != EntryKey::TimeUs) nonNegative |= uint16_t(1u << h);
    }
    if (planCount_ % kPlansPerChunk == 0) planChunks_.push_back(std::make_unique<Plan[]>(kPlansPerChunk));
    planChunks_[planCount_ / kPlansPerChunk][planCount_ % kPlansPerChunk] = plan;
    refusedNegative = nonNegative;
    return static_cast<int32_t>(planCount_++);
}

uint32_t TraceRows::addRow(const Row& r) {
    if (queue_.finished()) [[unlikely]] {
        appendRow(r);
    } else {
        uint64_t* w = queue_.reserve(1 + kRowWords);
        w[0] = 0;
        std::memcpy(w + 1, &r, sizeof r);
        queue_.commit(1 + kRowWords);
    }
    return static_cast<uint32_t>(numbered_++);
}

[[gnu::flatten]] void TraceRows::consume(const uint64_t* words, size_t n) {
    for (size_t i = 0; i < n;) {
        const uint64_t head = words[i];
        if (!(head & 1)) {
            Row r;
            std::memcpy(&r, words + i + 1, sizeof r);
            appendRow(r);
            i += 1 + kRowWords;
            continue;
        }
        const Plan& p = planAt(static_cast<size_t>(head >> 1));
        const uint64_t* values = words + i + 1;
        i += 1 + p.holes;
        // each value into its field, by the field's number (no branch a hole): the fields the
        // reader ignores (Other, device_free) and those no hole names keep what they were
        uint64_t field[kEntryKeys];
        field[static_cast<size_t>(EntryKey::Addr)] = p.row.addr;
        field[static_cast<size_t>(EntryKey::Size)] = p.row.size;
        field[static_cast<size_t>(EntryKey::Stream)] = p.row.stream;
        field[static_cast<size_t>(EntryKey::TimeUs)] = static_cast<uint64_t>(p.row.timeUs);
        field[static_cast<size_t>(EntryKey::Frames)] = p.row.stack;
        for (size_t h = 0; h < p.holes; ++h) field[static_cast<size_t>(p.field[h])] = values[h];
        Row r = p.row;
        r.addr = field[static_cast<size_t>(EntryKey::Addr)];
        r.size = field[static_cast<size_t>(EntryKey::Size)];
        r.stream = field[static_cast<size_t>(EntryKey::Stream)];
        r.timeUs = static_cast<int64_t>(field[static_cast<size_t>(EntryKey::TimeUs)]);
        r.stack = static_cast<StackId>(field[static_cast<size_t>(EntryKey::Frames)]);
        appendRow(r);
    }
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
[[gnu::flatten]] void TraceRows::appendRow(const Row& r) {
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
    const size_t row = t.rows() - 1;
    if (row % kPrefaultEvery == 0) [[unlikely]]
        prefaultColumns();
}

[[gnu::noinline]] void TraceRows::prefaultColumns() {
    const auto& t = rows_;
    doc_.prefaultAhead(t.action, prefaulted_[0], kPrefaultRows);
    doc_.prefaultAhead(t.flags, prefaulted_[1], kPrefaultRows);
    doc_.prefaultAhead(t.addr.bytes(), prefaulted_[2], kPrefaultRows);
    doc_.prefaultAhead(t.size.bytes(), prefaulted_[3], kPrefaultRows);
    doc_.prefaultAhead(t.timeUs.bytes(), prefaulted_[4], kPrefaultRows);
    doc_.prefaultAhead(t.stack.bytes(), prefaulted_[5], kPrefaultRows);
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
