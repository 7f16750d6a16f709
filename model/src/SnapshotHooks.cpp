#include "SnapshotHooks.h"

#include <algorithm>

namespace memlens::model {

SnapshotHooks::SnapshotHooks(PickleDocument& doc, const SnapshotKeys& keys, Snapshot& snap, uint64_t fileBytes)
    : doc_(doc), snap_(snap), frames_(snap, keys), rows_(doc, keys, fileBytes), blocks_(doc, keys), annotations_(doc, keys, fileBytes) {
    doc.reserve(static_cast<size_t>(std::min<uint64_t>(fileBytes / 24 + 64, uint64_t(1) << 28)),
                static_cast<size_t>(std::min<uint64_t>(fileBytes / sizeof(Value) + 64, uint64_t(1) << 28)));
}

Value SnapshotHooks::collapse(PickleDocument& doc, Value v) {
    if (v.tag == Tag::Dict) {
        const auto& nd = doc.node(v.ref);
        if (nd.count >= 2 && nd.count <= 64) {
            tmpItems_.clear();
            doc.forEach(v.ref, [&](const Value& x) { tmpItems_.push_back(x); });
            Value out;
            if (absorb(tmpItems_.data(), tmpItems_.size(), out)) return out;
        }
    } else if (v.tag == Tag::List) {
        const auto& nd = doc.node(v.ref);
        if (nd.count > 0) {
            bool allFrames = true;
            doc.forEach(v.ref, [&](const Value& x) { allFrames = allFrames && x.tag == Tag::Frame; });
            if (allFrames) {
                StackId s = internStack(v.ref);
                doc.release(v.ref);
                return Value::node(Tag::Stack, s);
            }
        }
    }
    return v;
}

bool SnapshotHooks::absorbList(PickleDocument&, const Value* items, size_t n, Value& out) {
    for (size_t i = 0; i < n; ++i)
        if (items[i].tag != Tag::Frame) return false;
    tmpFrames_.resize(n);
    for (size_t i = 0; i < n; ++i) tmpFrames_[i] = items[i].ref;
    out = Value::node(Tag::Stack, frames_.stack(tmpFrames_.data(), n));
    return true;
}

void SnapshotHooks::expandList(PickleDocument&, Value collapsed, std::vector<Value>& items) {
    StackId s = collapsed.ref;
    for (const FrameId* f = snap_.stackBegin(s); f != snap_.stackBegin(s) + snap_.stackSize(s); ++f)
        items.push_back(Value::node(Tag::Frame, *f));
}

bool SnapshotHooks::absorb(const Value* items, size_t n, Value& out) {
    if (n >= 6 && n <= 16) {  // a frame has 3 keys, up to 7 with the fx_* fields (and one more foreign key)
        if (auto f = frames_.frame(items, n)) {
            out = Value::node(Tag::Frame, *f);
            return true;
        }
    }
    if (uint32_t r; rows_.fromItems(items, n, r)) {
        out = Value::node(Tag::Row, r);
        return true;
    }
    if (auto b = blocks_.fromItems(items, n)) {
        out = Value::node(Tag::Block, *b);
        return true;
    }
    if (auto a = annotations_.fromItems(items, n)) {
        out = Value::node(Tag::Annotation, *a);
        return true;
    }
    return false;
}

int32_t SnapshotHooks::planDict(const Value* items, size_t n, const uint8_t* holeItems, size_t holes,
                                uint16_t& refusedNegative) {
    // absorb() offers dicts of 6 to 16 items to the frames; FrameTable::frame refuses one of more
    // than 8 whose first key is not a frame's by that key alone
    const bool notAFrame = n > 16 || (n > 8 && items[0].tag == Tag::Str && !frames_.frameKey(items[0].ref));
    return notAFrame ? rows_.plan(items, n, holeItems, holes, refusedNegative) : -1;
}

StackId SnapshotHooks::internStack(uint32_t listNode) {
    tmpFrames_.clear();
    doc_.forEach(listNode, [&](const Value& x) { tmpFrames_.push_back(x.ref); });
    return frames_.stack(tmpFrames_.data(), tmpFrames_.size());
}

} // namespace memlens::model
