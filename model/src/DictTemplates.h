#pragma once
// Internal to the pickle machine: dicts recognised by their bytes, numbers aside.
#include "memlens/model/PickleValue.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <unordered_map>
#include <vector>

namespace memlens::model {

// A training loop writes the same trace entries every iteration: the same keys, action, stream
// and frames (memo gets of the same slots), only the numbers differ (address, time, often the
// size). Such an entry's bytes are those of an entry read before, except for the bytes of its
// numbers. A template is such a dict's bytes with its numbers' bytes left out (masked): its
// opcodes (BININT1, BININT2, BININT, LONG1 and its length) and everything else are compared,
// so bytes that match are the same opcodes with the same lengths, the same memo gets and the
// same constants, and only the numbers need reading. A template keeps the items of the dict it
// was learnt from (keys, strings, frames lists already made into stacks, None, booleans) and the
// values its MEMOIZE opcodes stored after the dict's own (strings, stacks); the machine fills in
// the numbers and offers the items to its hooks as it would have.
//
// That holds while no memo slot is given another value: the machine then empties the templates
// (clear()). A dict is compared only with the templates predicted for it (predicted()): the two
// that followed the last eight templates latest, then the two that followed the last four, then,
// as in FrameRunCache, the two that followed the last template latest (one was not enough: a
// free_requested of the same stack and size is followed by different entries within an
// iteration, and the same four templates by different ones within a training step; eight
// templates tell more of those apart). Where it differs from those, it is read item by item as
// before and then looked up by its masked bytes.
class DictTemplates {
public:
    static constexpr uint32_t kNone = ~uint32_t(0);
    static constexpr size_t kMaxBytes = 2048;  // longer dicts are not learnt
    // At most this many templates (their numbers fit 16 bits), and 8 MiB of their bytes, masks
    // and items whatever their number.
    static constexpr size_t kMaxTemplates = 1 << 16;
    static constexpr size_t kMaxStored = size_t(8) << 20;
    // A number of the dict, or a memo get of a frames list: the offset of its opcode in the
    // dict's bytes, the item it is.
    struct Hole {
        uint16_t at;
        uint8_t item;
        uint8_t op;  // 'K', 'M', 'J', LONG1 (0x8a; its length byte follows the opcode), 'h' or 'j'
    };
    // A hole as read by a plan: the 8 bytes at `at` (its operand's first byte; the template's
    // length and 8 bytes past it are buffered) shifted left then right by `shift`, logically for
    // BININT1 and BININT2 (Unsigned), arithmetically for BININT and LONG1 (Signed), or a memo
    // index of one byte (BINGET: Get1) or four (LONG_BINGET: Get4).
    struct Operand {
        enum Kind : uint8_t { Unsigned, Signed, Get1, Get4 };
        uint16_t at;
        uint8_t shift;
        Kind kind;
    };

    // Whether the next dict is to be offered to the templates at all (replayed, or read and
    // learnt). Where few dicts were replayed lately (a trace that does not repeat in order),
    // looking them up and learning them costs more than replaying the few saves: then not, for a
    // while (doubled each time the templates do no better when tried again).
    bool active() {
        if (paused_ == 0) [[likely]]
            return true;
        --paused_;
        return false;
    }
    // The templates predicted at the start of the next dict, or kNone: ways 0 and 1 by the last
    // 2 * kContext templates, ways 2 and 3 by the last kContext, ways 4 and 5 by the last one.
    static constexpr int kWays = 6;
    uint32_t predicted(int way) const {
        if (way < 2) {
            const uint32_t t = byLongContext_[2 * (longContextHash() & kContextMask) + way];
            return t < count_ ? t : kNone;
        }
        if (way < 4) {
            // the table is not emptied with the templates (clear()): a number from before may
            // name a template learnt since, which match() then compares as any other
            const uint32_t t = byContext_[2 * (contextHash() & kContextMask) + way - 2];
            return t < count_ ? t : kNone;
        }
        return last_ == kNone ? kNone : templates_[last_].next[way - 4];
    }

    // The length of template t when the bytes at p (avail of them buffered) are its bytes, its
    // numbers aside; 0 otherwise. Compares 64 bytes at a time (a template's blocks are padded to
    // a multiple of four with blocks masked out), so reads up to 64 bytes past the dict, and 8
    // past a number's opcode: asks for them to be buffered.
    size_t match(uint32_t t, const uint8_t* p, size_t avail) const {
        const Template& tp = templates_[t];
        const size_t groups = (tp.length + kGroupBytes - 1) / kGroupBytes;
        if (avail < groups * kGroupBytes + 8) return 0;
        const Block* bytes = blocks_.data() + tp.block;
        const Block* mask = masks_.data() + tp.block;
        for (size_t g = 0; g < groups; ++g, p += kGroupBytes, bytes += 4, mask += 4) {
            // four loads of their own: one copy of 64 bytes into an array went through the stack
            Vec w0, w1, w2, w3;
            std::memcpy(&w0, p, 16);
            std::memcpy(&w1, p + 16, 16);
            std::memcpy(&w2, p + 32, 16);
            std::memcpy(&w3, p + 48, 16);
            const Vec diff = ((w0 ^ bytes[0].v) & mask[0].v) | ((w1 ^ bytes[1].v) & mask[1].v) |
                             ((w2 ^ bytes[2].v) & mask[2].v) | ((w3 ^ bytes[3].v) & mask[3].v);
            if ((diff[0] | diff[1]) != 0) return 0;  // another dict: said early
        }
        return tp.length;
    }

    // Template t's items (n of them; the holes hold the numbers of the last dict it stood for,
    // the caller writes the next ones there), the holes to fill in them, and the values its
    // other MEMOIZE opcodes store, in order.
    size_t itemCount(uint32_t t) const { return templates_[t].items; }
    Value* items(uint32_t t) { return items_.data() + templates_[t].item0; }
    size_t holeCount(uint32_t t) const { return templates_[t].holes; }
    const Hole* holes(uint32_t t) const { return holes_.data() + templates_[t].hole0; }
    const Operand* operands(uint32_t t) const { return operands_.data() + templates_[t].hole0; }
    size_t putCount(uint32_t t) const { return templates_[t].puts; }
    // The hooks' plan for template t's dicts (PickleHooks::planDict), or -1, and the holes whose
    // value it refuses negative (bit h: hole h).
    int32_t plan(uint32_t t) const { return templates_[t].plan; }
    uint32_t refusedNegative(uint32_t t) const { return templates_[t].refusedNegative; }
    void setPlan(uint32_t t, int32_t plan, uint16_t refusedNegative) {
        templates_[t].plan = plan;
        templates_[t].refusedNegative = refusedNegative;
    }
    const Value* puts(uint32_t t) const { return puts_.data() + templates_[t].put0; }
    // The same values as the machine packs them in its memo, where it gave them (read()), or null.
    const uint32_t* packedPuts(uint32_t t) const {
        const Template& tp = templates_[t];
        return tp.packed ? packedPuts_.data() + tp.put0 : nullptr;
    }

    // Template t stood for the dict just read.
    void replayed(uint32_t t) {
        follow(t);
        ++replayed_;
        tried();
    }
    // The dict of `length` bytes at p was read item by item into items (n), with these holes
    // and the values of its MEMOIZE opcodes after the dict's own (puts; packedPuts: the same
    // packed as the memo keeps them, or null where one is not kept so); learnable when the
    // machine may replay it (no FRAME inside, the hooks made it a row). Finds or learns its
    // template and makes it the successor of the last one. Returns the template when it is new
    // (learnt from this dict), kNone otherwise.
    uint32_t read(const uint8_t* p, size_t length, const Hole* holes, size_t holeCount, const Value* items, size_t n,
              const Value* puts, const uint32_t* packedPuts, size_t putCount, bool learnable);
    void clear();
    size_t size() const { return templates_.size(); }

private:
    using Vec = uint64_t __attribute__((vector_size(16)));  // one SSE2 register
    static constexpr size_t kGroupBytes = 64;  // compared at once: four blocks
    union Block {
        Vec v;
        uint64_t w[2];
    };
    struct Template {
        uint32_t block;  // first of its blocks in blocks_ and masks_ (a multiple of four of them)
        uint16_t length;
        uint8_t items, holes, puts;
        bool packed;  // packedPuts_ holds its puts
        uint16_t refusedNegative = 0;
        uint32_t item0, hole0, put0;
        int32_t plan = -1;
        uint32_t next[2] = {kNone, kNone};  // the templates that followed this one last, the latest first
    };
    // A dict offered (replayed or read): every kWindow of them, the templates go on only if
    // they replayed at least half.
    void tried() {
        if (++offered_ < kWindow) [[likely]]
            return;
        if (replayed_ * 2 < offered_) {
            paused_ = pause_;
            pause_ = std::min(pause_ * 2, kLongestPause);
            last_ = kNone;
        } else {
            pause_ = kShortestPause;
        }
        offered_ = replayed_ = 0;
    }
    static constexpr uint32_t kWindow = 4096;
    static constexpr uint64_t kShortestPause = 1 << 16, kLongestPause = 1 << 22;
    static constexpr size_t kContext = 4;
    static_assert(kContext * 16 == 64, "recent_ holds the last kContext templates' numbers");
    static constexpr size_t kContextMask = (size_t(1) << 15) - 1;
    // the last kContext templates' numbers (below kMaxTemplates: 16 bits each), the latest lowest
    uint64_t contextHash() const { return (recent_ * 0x9e3779b97f4a7c15ULL) >> 40; }
    uint64_t longContextHash() const { return ((recent_ ^ (older_ * 0xc2b2ae3d27d4eb4fULL)) * 0x9e3779b97f4a7c15ULL) >> 40; }
    // Template t (or kNone) follows the last one.
    void follow(uint32_t t) {
        if (t != kNone) {
            latest(byContext_.data() + 2 * (contextHash() & kContextMask), t);
            latest(byLongContext_.data() + 2 * (longContextHash() & kContextMask), t);
            if (last_ != kNone) latest(templates_[last_].next, t);
        }
        older_ = (older_ << 16) | (recent_ >> 48);
        recent_ = (recent_ << 16) | (t & 0xffff);
        last_ = t;
    }
    // Two ways, the latest first: t becomes the latest.
    static void latest(uint32_t* ways, uint32_t t) {
        if (ways[0] != t) {
            ways[1] = ways[0];
            ways[0] = t;
        }
    }
    bool sameShape(const Template& t, const std::vector<Block>& bytes, const std::vector<Block>& mask) const;

    std::vector<Template> templates_;
    uint32_t count_ = 0;  // templates_.size(), without a division by sizeof(Template) for each dict
    std::vector<Block> blocks_, masks_;  // bytes & mask, and the mask, 16 bytes a block
    std::vector<Value> items_, puts_;
    std::vector<uint32_t> packedPuts_;  // beside puts_
    std::vector<Hole> holes_;
    std::vector<Operand> operands_;  // the holes again, as a plan reads them
    std::unordered_map<uint64_t, uint32_t> byShape_;  // hash of the masked bytes -> template
    std::vector<Block> tmpBytes_, tmpMask_;
    uint32_t last_ = kNone;
    uint64_t recent_ = ~uint64_t(0);
    // by a hash of the last kContext templates: the two templates that followed them latest, the
    // latest first (256 KiB)
    std::vector<uint32_t> byContext_ = std::vector<uint32_t>(2 * (kContextMask + 1), kNone);
    // the kContext templates before those of recent_, and by a hash of all 2 * kContext: the two
    // that followed them latest (256 KiB)
    uint64_t older_ = ~uint64_t(0);
    std::vector<uint32_t> byLongContext_ = std::vector<uint32_t>(2 * (kContextMask + 1), kNone);
    uint32_t offered_ = 0, replayed_ = 0;  // dicts offered, and replayed, in this window
    uint64_t paused_ = 0;                 // dicts not to offer from here on
    uint64_t pause_ = kShortestPause;     // the next pause
};

} // namespace memlens::model
