#include "memlens/model/SimulatorSettings.h"

#include "memlens/model/Snapshot.h"

#include <bit>
#include <charconv>
#include <cmath>
#include <stdexcept>

namespace memlens::model {

namespace {

constexpr uint64_t kMinBlockSize = 512;
constexpr uint64_t kSmallSize = 1ull << 20;
constexpr uint64_t kSmallBuffer = 2ull << 20;
constexpr uint64_t kMinLargeAlloc = 10ull << 20;
constexpr uint64_t kRoundLarge = 2ull << 20;

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\n')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\n')) s.remove_suffix(1);
    return s;
}

[[noreturn]] void bad(std::string_view key, std::string_view value, const std::string& why) {
    throw std::invalid_argument(std::string(key) + "=" + std::string(value) + ": " + why);
}

uint64_t parseUnsigned(std::string_view key, std::string_view v) {
    v = trim(v);
    uint64_t out = 0;
    auto r = std::from_chars(v.data(), v.data() + v.size(), out);
    if (v.empty() || r.ec != std::errc() || r.ptr != v.data() + v.size()) bad(key, v, "not a non-negative integer");
    return out;
}

double parseDouble(std::string_view key, std::string_view v) {
    v = trim(v);
    std::string s(v);
    char* end = nullptr;
    double d = std::strtod(s.c_str(), &end);
    if (s.empty() || end != s.c_str() + s.size() || !std::isfinite(d)) bad(key, v, "not a number");
    return d;
}

bool parseBool(std::string_view key, std::string_view v) {
    v = trim(v);
    if (v == "True" || v == "true" || v == "1") return true;
    if (v == "False" || v == "false" || v == "0") return false;
    bad(key, v, "expected True or False");
}

uint32_t checkedDivisions(std::string_view key, std::string_view value, uint64_t d) {
    if (d != 0 && !std::has_single_bit(d)) bad(key, value, "divisions must be a power of two");
    if (d > (1u << 20)) bad(key, value, "too many divisions");
    return static_cast<uint32_t>(d);
}

int slotOf(uint64_t size) {
    if (size == 0) return 0;
    int lg = 63 - std::countl_zero(size);
    int slot = lg - 20;
    return slot < 0 ? 0 : (slot > 15 ? 15 : slot);
}

} // namespace

uint64_t SimulatorSettings::roundSize(uint64_t size) const {
    if (size < kMinBlockSize) return kMinBlockSize;
    uint64_t div = roundupDivisions[static_cast<size_t>(slotOf(size))];
    if (div > 1 && size > kMinBlockSize * div) {
        if (std::has_single_bit(size)) return size;
        uint64_t floor = std::bit_floor(size);
        uint64_t step = floor / div;
        if (step == 0) return floor << 1;
        uint64_t f = size & ~(step - 1);
        return f == size ? size : f + step;
    }
    return kMinBlockSize * ((size + kMinBlockSize - 1) / kMinBlockSize);
}

uint64_t SimulatorSettings::allocationSize(uint64_t rounded) const {
    if (rounded <= kSmallSize) return kSmallBuffer;
    if (rounded < kMinLargeAlloc) return largeSegmentSize;
    return kRoundLarge * ((rounded + kRoundLarge - 1) / kRoundLarge);
}

uint64_t SimulatorSettings::allowedMaximum() const {
    if (!fractionSet() || capacity == 0) return kUnlimited;
    return static_cast<uint64_t>(fraction * static_cast<double>(capacity));
}

void SimulatorSettings::set(std::string_view key, std::string_view value) {
    key = trim(key);
    std::string_view v = trim(value);
    if (key == "expandable_segments") {
        expandableSegments = parseBool(key, v);
    } else if (key == "max_split_size_mb") {
        uint64_t mb = parseUnsigned(key, v);
        if (mb * kMiB < largeSegmentSize)
            bad(key, v, "must be at least " + std::to_string(largeSegmentSize / kMiB) + " (MB)");
        maxSplitSize = mb * kMiB;
    } else if (key == "max_non_split_rounding_mb") {
        uint64_t mb = parseUnsigned(key, v);
        if (mb * kMiB < largeSegmentSize)
            bad(key, v, "must be at least " + std::to_string(largeSegmentSize / kMiB) + " (MB)");
        maxNonSplitRounding = mb * kMiB;
    } else if (key == "large_segment_size_mb") {
        uint64_t mb = parseUnsigned(key, v);
        if (mb <= 10) bad(key, v, "must be more than 10 (MB)");
        largeSegmentSize = mb * kMiB;
    } else if (key == "garbage_collection_threshold") {
        double t = parseDouble(key, v);
        if (!(t > 0.0 && t < 1.0)) bad(key, v, "must be strictly between 0 and 1");
        garbageCollectionThreshold = t;
    } else if (key == "roundup_power2_divisions") {
        std::array<uint32_t, 16> slots{};
        if (!v.empty() && v.front() == '[') {
            if (v.back() != ']') bad(key, v, "a list must end with ']'");
            std::string_view body = v.substr(1, v.size() - 2);
            int last = -1;
            bool first = true;
            while (!body.empty()) {
                size_t comma = body.find(',');
                std::string_view item = trim(body.substr(0, comma));
                body = comma == std::string_view::npos ? std::string_view{} : body.substr(comma + 1);
                size_t colon = item.find(':');
                if (colon == std::string_view::npos) bad(key, v, "list items are MB:divisions");
                std::string_view k = trim(item.substr(0, colon));
                uint32_t d = checkedDivisions(key, v, parseUnsigned(key, item.substr(colon + 1)));
                if (k == ">") {
                    for (int s = last + 1; s < 16; ++s) slots[static_cast<size_t>(s)] = d;
                    continue;
                }
                uint64_t mb = parseUnsigned(key, k);
                if (!std::has_single_bit(mb)) bad(key, v, "interval keys must be powers of two (MB)");
                int slot = std::min(15, 63 - std::countl_zero(mb));
                if (first)
                    for (int s = 0; s < slot; ++s) slots[static_cast<size_t>(s)] = d;
                slots[static_cast<size_t>(slot)] = d;
                last = slot;
                first = false;
            }
        } else {
            uint32_t d = checkedDivisions(key, v, parseUnsigned(key, v));
            slots.fill(d);
        }
        roundupDivisions = slots;
    } else if (key == "per_process_memory_fraction" || key == "fraction") {
        double f = parseDouble(key, v);
        if (!(f > 0.0 && f <= 1.0)) bad(key, v, "must be in (0, 1]");
        fraction = f >= 1.0 ? 0.0 : f;  // newest torch: 1.0 removes the limit
    } else if (key == "capacity") {
        capacity = parseUnsigned(key, v);
        if (capacity == 0) bad(key, v, "must be positive");
    } else {
        throw std::invalid_argument("unknown allocator setting '" + std::string(key) +
                                    "' (known: expandable_segments, max_split_size_mb, max_non_split_rounding_mb, "
                                    "large_segment_size_mb, garbage_collection_threshold, roundup_power2_divisions, "
                                    "per_process_memory_fraction)");
    }
}

void SimulatorSettings::applyAllocConf(std::string_view conf) {
    // key:value pairs separated by commas; a value may be a [list] holding commas
    size_t i = 0;
    while (i < conf.size()) {
        size_t colon = conf.find(':', i);
        if (colon == std::string_view::npos) break;
        std::string_view key = trim(conf.substr(i, colon - i));
        size_t j = colon + 1;
        while (j < conf.size() && conf[j] == ' ') ++j;
        size_t end;
        if (j < conf.size() && conf[j] == '[') {
            end = conf.find(']', j);
            end = end == std::string_view::npos ? conf.size() : end + 1;
        } else {
            end = conf.find(',', j);
            if (end == std::string_view::npos) end = conf.size();
        }
        std::string_view value = trim(conf.substr(j, end - j));
        if (key == "expandable_segments" || key == "max_split_size_mb" || key == "max_non_split_rounding_mb" ||
            key == "large_segment_size_mb" || key == "garbage_collection_threshold" ||
            key == "roundup_power2_divisions" || key == "per_process_memory_fraction") {
            try {
                set(key, value);
            } catch (const std::invalid_argument&) {
                // torch refused it too, or it was valid in another version: keep the default
            }
        }
        i = conf.find(',', end);
        if (i == std::string_view::npos) break;
        ++i;
    }
}

SimulatorSettings SimulatorSettings::fromSnapshot(const Snapshot& snapshot) {
    SimulatorSettings s;
    for (const auto& [k, v] : snapshot.allocatorSettings)
        if (k == "PYTORCH_CUDA_ALLOC_CONF") s.applyAllocConf(v);
    for (const auto& [k, v] : snapshot.allocatorSettings) {
        if (k == "expandable_segments") {
            s.expandableSegments = v == "True";
        } else if (k == "max_split_size") {
            if (!v.empty() && v[0] != '-') {
                uint64_t b = 0;
                auto r = std::from_chars(v.data(), v.data() + v.size(), b);
                if (r.ec == std::errc() && b > 0) s.maxSplitSize = b;
            }
        } else if (k == "garbage_collection_threshold") {
            double t = std::strtod(v.c_str(), nullptr);
            if (t > 0.0 && t < 1.0) s.garbageCollectionThreshold = t;
        } else if (k == "roundup_power2_divisions" && !v.empty() && v[0] == '{') {
            // {1: 0, 2: 0, 4: 0, ...}: key 2^i (MB) is slot i
            std::string_view body(v);
            body = body.substr(1, body.size() - 2);
            while (!body.empty()) {
                size_t comma = body.find(',');
                std::string_view item = trim(body.substr(0, comma));
                body = comma == std::string_view::npos ? std::string_view{} : body.substr(comma + 1);
                size_t colon = item.find(':');
                if (colon == std::string_view::npos) continue;
                std::string_view key = trim(item.substr(0, colon));
                std::string_view val = trim(item.substr(colon + 1));
                if (!key.empty() && (key.front() == '\'' || key.front() == '"')) key = key.substr(1, key.size() - 2);
                uint64_t mb = 0, d = 0;
                if (std::from_chars(key.data(), key.data() + key.size(), mb).ec != std::errc() ||
                    std::from_chars(val.data(), val.data() + val.size(), d).ec != std::errc() ||
                    !std::has_single_bit(mb))
                    continue;
                int slot = std::min(15, 63 - std::countl_zero(mb));
                s.roundupDivisions[static_cast<size_t>(slot)] = static_cast<uint32_t>(d);
            }
        }
    }
    return s;
}

std::string SimulatorSettings::describe() const {
    SimulatorSettings d;
    std::string out;
    auto add = [&](const std::string& kv) { out += (out.empty() ? "" : ",") + kv; };
    if (expandableSegments != d.expandableSegments) add(std::string("expandable_segments:") + (expandableSegments ? "True" : "False"));
    if (maxSplitSize != d.maxSplitSize) add("max_split_size_mb:" + std::to_string(maxSplitSize / kMiB));
    if (maxNonSplitRounding != d.maxNonSplitRounding)
        add("max_non_split_rounding_mb:" + std::to_string(maxNonSplitRounding / kMiB));
    if (largeSegmentSize != d.largeSegmentSize) add("large_segment_size_mb:" + std::to_string(largeSegmentSize / kMiB));
    if (garbageCollectionThreshold != 0.0) add("garbage_collection_threshold:" + std::to_string(garbageCollectionThreshold));
    if (roundupDivisions != d.roundupDivisions) {
        std::string l = "[";
        for (size_t i = 0; i < 16; ++i)
            l += (i ? "," : "") + std::to_string(1u << i) + ":" + std::to_string(roundupDivisions[i]);
        add("roundup_power2_divisions:" + l + "]");
    }
    if (fractionSet()) add("per_process_memory_fraction:" + std::to_string(fraction));
    return out;
}

} // namespace memlens::model
