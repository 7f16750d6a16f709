#include "DictTemplates.h"

namespace memlens::model {

namespace {
// The bytes of a hole's operand after its opcode: BININT1, BININT2, BININT, BINGET, LONG_BINGET,
// and LONG1's length byte (kept) then as many bytes as it says.
size_t operandBytes(const uint8_t* op, size_t& skip) {
    skip = 1;
    switch (*op) {
    case 'K': case 'h': return 1;
    case 'M': return 2;
    case 'J': case 'j': return 4;
    default: skip = 2; return op[1];  // LONG1
    }
}

DictTemplates::Operand operandOf(const uint8_t* op, uint16_t at) {
    using Operand = DictTemplates::Operand;
    size_t skip;
    const size_t len = operandBytes(op, skip);
    const auto shift = static_cast<uint8_t>(64 - 8 * len);
    const auto first = static_cast<uint16_t>(at + skip);
    switch (*op) {
    case 'K': case 'M': return {first, shift, Operand::Unsigned};
    case 'h': return {first, shift, Operand::Get1};
    case 'j': return {first, shift, Operand::Get4};
    default: return {first, shift, Operand::Signed};  // BININT, LONG1 of 1 to 8 bytes
    }
}

uint64_t mix(uint64_t h, uint64_t w) {
    h ^= w + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    return h * 0xff51afd7ed558ccdULL;
}
} // namespace

bool DictTemplates::sameShape(const Template& t, const std::vector<Block>& bytes, const std::vector<Block>& mask) const {
    const size_t blocks = (t.length + 15) / 16;
    if (blocks != bytes.size()) return false;
    for (size_t i = 0; i < blocks; ++i)
        for (int k = 0; k < 2; ++k)
            if (blocks_[t.block + i].w[k] != bytes[i].w[k] || masks_[t.block + i].w[k] != mask[i].w[k]) return false;
    return true;
}

uint32_t DictTemplates::read(const uint8_t* p, size_t length, const Hole* holes, size_t holeCount, const Value* items,
                         size_t n, const Value* puts, const uint32_t* packedPuts, size_t putCount, bool learnable) {
    tried();
    if (!learnable || length > kMaxBytes) {  // no template to find or learn: nothing to hash
        follow(kNone);
        return kNone;
    }
    const size_t blocks = (length + 15) / 16;
    tmpBytes_.assign(blocks, Block{.w = {0, 0}});
    tmpMask_.assign(blocks, Block{.w = {0, 0}});
    auto* bytes = reinterpret_cast<uint8_t*>(tmpBytes_.data());
    auto* mask = reinterpret_cast<uint8_t*>(tmpMask_.data());
    std::memcpy(bytes, p, length);
    std::memset(mask, 0xff, length);
    for (size_t i = 0; i < holeCount; ++i) {
        size_t skip;
        const size_t len = operandBytes(p + holes[i].at, skip);
        std::memset(mask + holes[i].at + skip, 0, len);
    }
    uint64_t hash = length;
    for (size_t i = 0; i < blocks; ++i)
        for (int k = 0; k < 2; ++k) {
            tmpBytes_[i].w[k] &= tmpMask_[i].w[k];
            hash = mix(hash, tmpBytes_[i].w[k]);
        }
    uint32_t found = kNone, learnt = kNone;
    if (auto it = byShape_.find(hash); it != byShape_.end()) {
        if (sameShape(templates_[it->second], tmpBytes_, tmpMask_)) found = it->second;
    } else if (templates_.size() < kMaxTemplates &&
               (blocks_.size() + blocks + 3) * 2 * sizeof(Block) + (items_.size() + n) * sizeof(Value) <= kMaxStored) {
        Template t;
        t.block = static_cast<uint32_t>(blocks_.size());
        t.length = static_cast<uint16_t>(length);
        t.items = static_cast<uint8_t>(n);
        t.holes = static_cast<uint8_t>(holeCount);
        t.puts = static_cast<uint8_t>(putCount);
        t.packed = packedPuts != nullptr;
        t.item0 = static_cast<uint32_t>(items_.size());
        t.hole0 = static_cast<uint32_t>(holes_.size());
        t.put0 = static_cast<uint32_t>(puts_.size());
        blocks_.insert(blocks_.end(), tmpBytes_.begin(), tmpBytes_.end());
        masks_.insert(masks_.end(), tmpMask_.begin(), tmpMask_.end());
        // padded to whole groups of four blocks, masked out: match() compares groups
        const size_t padded = (blocks + 3) / 4 * 4;
        blocks_.resize(blocks_.size() + padded - blocks, Block{.w = {0, 0}});
        masks_.resize(masks_.size() + padded - blocks, Block{.w = {0, 0}});
        items_.insert(items_.end(), items, items + n);
        holes_.insert(holes_.end(), holes, holes + holeCount);
        for (size_t i = 0; i < holeCount; ++i) operands_.push_back(operandOf(p + holes[i].at, holes[i].at));
        puts_.insert(puts_.end(), puts, puts + putCount);
        if (packedPuts) packedPuts_.insert(packedPuts_.end(), packedPuts, packedPuts + putCount);
        else packedPuts_.resize(puts_.size());
        found = learnt = static_cast<uint32_t>(templates_.size());
        templates_.push_back(t);
        count_ = static_cast<uint32_t>(templates_.size());
        byShape_.emplace(hash, found);
    }
    follow(found);
    return learnt;
}

void DictTemplates::clear() {
    templates_.clear();
    count_ = 0;
    blocks_.clear();
    masks_.clear();
    items_.clear();
    puts_.clear();
    packedPuts_.clear();
    holes_.clear();
    operands_.clear();
    byShape_.clear();
    recent_ = older_ = ~uint64_t(0);
    last_ = kNone;
}

} // namespace memlens::model
