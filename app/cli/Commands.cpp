#include "CommandHelpers.h"
#include "Commands.h"

#include "CliArgs.h"

#include "memlens/model/AllocatorState.h"
#include "memlens/model/MemoryCategory.h"
#include "memlens/model/ParseError.h"
#include "memlens/model/SnapshotReader.h"
#include "memlens/model/SnapshotSlice.h"
#include "memlens/model/SnapshotStats.h"
#include "memlens/model/Timeline.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <stdexcept>

namespace memlens::cli {

using model::Snapshot;

namespace {

std::string humanBytes(uint64_t b) {
    const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = static_cast<double>(b);
    int u = 0;
    while (v >= 1024 && u < 4) {
        v /= 1024;
        ++u;
    }
    char buf[32];
    std::snprintf(buf, sizeof buf, u ? "%.1f %s" : "%.0f %s", v, units[u]);
    return buf;
}

} // namespace

int statsCommand(const std::vector<std::string>& args) {
    CliArgs a(args, {"json"}, {});
    Snapshot snap = model::readSnapshotFile(oneFile(a, "stats"));
    auto stats = model::computeStats(snap);
    if (a.has("json")) {
        Json devices = Json::array();
        for (const auto& d : stats) {
            Json actions = Json::object();
            for (const auto& [name, n] : d.actions) actions[name] = n;
            Json pools = Json::array();
            for (const auto& p : d.pools)
                pools.push_back(Json{{"pool", Json::array({p.pool.owner, p.pool.id})},
                                     {"segments", p.segments},
                                     {"reserved_bytes", p.reservedBytes},
                                     {"allocated_bytes", p.allocatedBytes}});
            const model::DeviceData* dd = snap.device(d.device);
            devices.push_back(Json{{"device", d.device},
                                   {"name", model::deviceName(d.device)},
                                   {"segments", d.segments},
                                   {"blocks", d.blocks},
                                   {"reserved_bytes", d.reservedBytes},
                                   {"allocated_bytes", d.allocatedBytes},
                                   {"requested_bytes", d.requestedBytes},
                                   {"free_bytes", d.freeBytes},
                                   {"largest_free_block", d.largestFreeBlock},
                                   {"trace_events", d.traceEvents},
                                   {"actions", actions},
                                   {"pools", pools},
                                   {"trace_overflowed", dd->traceOverflowed ? Json(*dd->traceOverflowed) : Json(nullptr)},
                                   {"trace_max_entries", dd->traceMaxEntries ? Json(*dd->traceMaxEntries) : Json(nullptr)}});
        }
        Json out{{"devices", devices}};
        if (!snap.notes.empty()) out["notes"] = snap.notes;  // what the file has that memlens does not show
        printJson(out);
        return 0;
    }
    for (const auto& d : stats) {
        const model::DeviceData* dd = snap.device(d.device);
        std::cout << (d.device == model::kHostDevice ? std::string("host (pinned)") : "device " + std::to_string(d.device))
                  << ": " << d.segments << " segments, " << d.blocks << " blocks, " << d.traceEvents << " trace entries"
                  << (dd->traceTruncated() ? " (the trace starts mid-run: its ring buffer overflowed)" : "") << "\n"
                  << "  reserved   " << humanBytes(d.reservedBytes) << "\n"
                  << "  allocated  " << humanBytes(d.allocatedBytes) << " (requested "
                  << humanBytes(d.requestedBytes) << ")\n"
                  << "  free       " << humanBytes(d.freeBytes) << ", largest free block "
                  << humanBytes(d.largestFreeBlock) << "\n";
        for (const auto& [name, n] : d.actions) std::cout << "  " << name << ": " << n << "\n";
        if (d.pools.size() > 1 || (d.pools.size() == 1 && !d.pools[0].pool.isDefault()))
            for (const auto& p : d.pools)
                std::cout << "  " << model::poolName(p.pool) << ": " << p.segments << " segments, reserved "
                          << humanBytes(p.reservedBytes) << ", allocated " << humanBytes(p.allocatedBytes) << "\n";
    }
    for (const auto& n : snap.notes) std::cout << "note: " << n << "\n";
    for (const auto& w : snap.warnings) std::cerr << "warning: " << w << "\n";
    return 0;
}

int timelineCommand(const std::vector<std::string>& args) {
    CliArgs a(args, {"csv"}, {"device"});
    std::string file = oneFile(a, "timeline");
    long long device = deviceArgument(a);
    Snapshot snap = model::readSnapshotFile(file);
    const model::DeviceData& dd = *snap.device(checkDevice(snap, device));
    auto tl = model::computeTimeline(dd);
    const auto& t = dd.trace;
    std::string out;
    out.reserve(64 * (t.rows() + 1));
    char buf[160];
    bool csv = a.has("csv");
    out += csv ? "index,action,addr,size,live_bytes,reserved_bytes\n" : "index  action  addr  size  live  reserved\n";
    for (size_t i = 0; i < t.rows(); ++i) {
        std::string_view name = t.action[i] == model::Action::Other ? snap.str(t.actionName[i])
                                                                     : model::actionName(t.action[i]);
        out += std::to_string(i);
        out += csv ? ',' : ' ';
        out += name;
        out += csv ? ',' : ' ';
        if (t.flags[i] & model::TraceColumns::HasAddr) {
            if (csv)
                std::snprintf(buf, sizeof buf, "%llu", static_cast<unsigned long long>(t.addr[i]));
            else
                std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(t.addr[i]));
            out += buf;
        } else if (!csv) {
            out += '-';
        }
        std::snprintf(buf, sizeof buf, csv ? ",%llu,%lld,%lld\n" : " %llu %lld %lld\n",
                      static_cast<unsigned long long>(t.size[i]), static_cast<long long>(tl.liveBytes[i]),
                      static_cast<long long>(tl.reservedBytes[i]));
        writeBuffered(out, buf);
    }
    std::cout << out;
    return 0;
}

int stateCommand(const std::vector<std::string>& args) {
    CliArgs a(args, {"json"}, {"device", "at"});
    std::string file = oneFile(a, "state");
    long long device = deviceArgument(a);
    long long at = a.integer("at");
    Snapshot snap = model::readSnapshotFile(file);
    int dev = checkDevice(snap, device);
    model::StateHistory history(snap, dev);
    if (at < -1 || at >= history.entries())
        throw model::ParseError(model::ParseError::kNoOffset, "--at " + std::to_string(at),
                                "no such trace entry: device " + model::deviceName(dev) + " has " +
                                    std::to_string(history.entries()) + " (use -1 .. " +
                                    std::to_string(history.entries() - 1) + ")");
    model::DeviceState st = history.stateAfter(at);
    if (a.has("json")) {
        Json segs = Json::array();
        for (const auto& s : st.segments) {
            Json blocks = Json::array();
            for (const auto& b : s.blocks)
                blocks.push_back(Json{{"address", b.address},
                                      {"size", b.size},
                                      {"requested_size", b.requestedSize},
                                      {"state", model::stateBlockKindName(b.kind)}});
            segs.push_back(Json{{"address", s.address},
                                {"total_size", s.totalSize},
                                {"stream", s.stream},
                                {"is_expandable", s.isExpandable},
                                {"pool", Json::array({s.pool.owner, s.pool.id})},
                                {"blocks", blocks}});
        }
        // live tensors by category, estimated from the stacks that allocated them
        const model::CategoryBytes cats = model::categoriesAt(st, model::stackRoles(snap));
        Json categories = Json::object();
        for (int c = 0; c < model::kMemoryCategoryCount; ++c)
            categories[model::memoryCategoryName(static_cast<model::MemoryCategory>(c))] = cats.bytes[static_cast<size_t>(c)];
        categories["estimated"] = cats.estimated;
        printJson(Json{{"device", dev},
                       {"name", model::deviceName(dev)},
                       {"at", at},
                       {"reserved_bytes", st.reservedBytes},
                       {"allocated_bytes", st.allocatedBytes},
                       {"requested_bytes", st.requestedBytes},
                       {"free_bytes", st.freeBytes},
                       {"largest_free_block", st.largestFreeBlock},
                       {"categories", categories},
                       {"segments", segs}});
        return 0;
    }
    std::cout << model::deviceLabel(dev) << " after entry " << at << ": reserved " << humanBytes(st.reservedBytes)
              << ", allocated " << humanBytes(st.allocatedBytes) << ", free " << humanBytes(st.freeBytes)
              << ", largest free block " << humanBytes(st.largestFreeBlock) << "\n";
    char buf[128];
    for (const auto& s : st.segments) {
        std::snprintf(buf, sizeof buf, "segment 0x%llx %s%s%s\n", static_cast<unsigned long long>(s.address),
                      humanBytes(s.totalSize).c_str(), s.isExpandable ? " (expandable)" : "",
                      s.pool.isDefault() ? "" : (", " + model::poolName(s.pool)).c_str());
        std::cout << buf;
        for (const auto& b : s.blocks) {
            std::snprintf(buf, sizeof buf, "  0x%llx %10s %s\n", static_cast<unsigned long long>(b.address),
                          humanBytes(b.size).c_str(), model::stateBlockKindName(b.kind));
            std::cout << buf;
        }
    }
    return 0;
}

int sliceCommand(const std::vector<std::string>& args) {
    CliArgs a(args, {}, {"device", "from", "to", "output"});
    const std::string file = oneFile(a, "slice");
    const auto out = a.value("output");
    if (!out) throw UsageError("slice needs -o OUT.pickle");
    const long long device = deviceArgument(a);
    if (device == model::kHostDevice)
        throw UsageError("--device host: slice cuts a GPU's trace (the pinned host memory has no memory_viz form yet)");
    const long long from = a.integer("from"), to = a.integer("to");
    Snapshot snap = model::readSnapshotFile(file);
    const int dev = checkDevice(snap, device);
    model::SliceInfo info;
    std::string bytes;
    try {
        bytes = model::sliceSnapshot(snap, dev, from, to, &info);
    } catch (const std::invalid_argument& e) {
        throw model::ParseError(model::ParseError::kNoOffset, "--from/--to", e.what());
    }
    // written beside OUT, then renamed: a reader never sees half a file
    const std::string tmp = *out + ".part";
    {
        std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
        f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
        f.close();
        if (!f) {
            std::remove(tmp.c_str());
            throw std::runtime_error("cannot write " + *out);
        }
    }
    if (std::rename(tmp.c_str(), out->c_str()) != 0) {
        std::remove(tmp.c_str());
        throw std::runtime_error("cannot write " + *out);
    }
    std::cout << *out << ": entries " << from << ".." << to << " of " << model::deviceName(dev) << " (" << info.entries
              << " entries, " << info.segments << " segments after entry " << to << ", " << info.annotations
              << " annotations), " << humanBytes(bytes.size()) << "\n";
    return 0;
}

} // namespace memlens::cli
