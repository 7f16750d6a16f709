#pragma once
// Test helper: small snapshots built in memory, in each layout torch writes, with known contents.
#include "PickleWriter.h"

#include "memlens/model/SnapshotReader.h"

#include <span>
#include <string>

namespace synth {

using testpickle::P;
using namespace testpickle;

inline P frame(const std::string& name, const std::string& file, int64_t line) {
    return dict({{"name", str(name)}, {"filename", str(file)}, {"line", num(line)}});
}

struct BlockSpec {
    uint64_t address;
    uint64_t size;
    uint64_t requested;
    std::string state;
    P frames;  // list or nullptr
};

inline P block(const BlockSpec& b) {
    return dict({{"address", unum(b.address)},
                 {"size", unum(b.size)},
                 {"requested_size", unum(b.requested)},
                 {"state", str(b.state)},
                 {"frames", b.frames ? b.frames : list()}});
}

inline P segment(int device, uint64_t address, const std::vector<BlockSpec>& blocks, bool expandable = false,
                 uint64_t stream = 0) {
    uint64_t total = 0, allocated = 0, active = 0, requested = 0;
    std::vector<P> bl;
    for (const auto& b : blocks) {
        total += b.size;
        if (b.state == "active_allocated") allocated += b.size;
        if (b.state != "inactive") {
            active += b.size;
            requested += b.requested;
        }
        bl.push_back(block(b));
    }
    return dict({{"device", num(device)},
                 {"address", unum(address)},
                 {"total_size", unum(total)},
                 {"allocated_size", unum(allocated)},
                 {"active_size", unum(active)},
                 {"requested_size", unum(requested)},
                 {"stream", unum(stream)},
                 {"segment_type", str(total > (2u << 20) ? "large" : "small")},
                 {"segment_pool_id", tuple({num(0), num(0)})},
                 {"is_expandable", boolean(expandable)},
                 {"frames", list()},
                 {"blocks", list(bl)}});
}

inline P entry(const std::string& action, uint64_t addr, uint64_t size, P frames = nullptr, int64_t time = -1) {
    std::vector<std::pair<std::string, P>> kv = {{"action", str(action)}, {"addr", unum(addr)}, {"size", unum(size)},
                                                 {"stream", num(0)}};
    if (time >= 0) kv.emplace_back("time_us", num(time));
    kv.emplace_back("frames", frames ? frames : list());
    return dict(kv);
}

inline P snapshot(std::vector<P> segments, std::vector<std::vector<P>> traces) {
    std::vector<P> tl;
    for (auto& t : traces) tl.push_back(list(t));
    return dict({{"segments", list(segments)},
                 {"device_traces", list(tl)},
                 {"allocator_settings", dict({{"PYTORCH_CUDA_ALLOC_CONF", str("")}, {"max_split_size", num(-1)}})},
                 {"external_annotations", list()}});
}

inline memlens::model::Snapshot read(const std::string& bytes) {
    return memlens::model::readSnapshotMemory(
        std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()));
}

inline memlens::model::Snapshot read(const P& v, int protocol = 4) { return read(dumps(v, protocol)); }

} // namespace synth
