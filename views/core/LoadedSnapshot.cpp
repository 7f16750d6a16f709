#include "core/LoadedSnapshot.h"

#include "memlens/model/ParseError.h"
#include "memlens/model/SnapshotReader.h"

#include <chrono>

namespace memlens::views {

std::shared_ptr<LoadedSnapshot> LoadedSnapshot::fromSnapshot(model::Snapshot snapshot, std::string path,
                                                             const model::LoadOptions& options) {
    auto out = std::make_shared<LoadedSnapshot>();
    out->path = std::move(path);
    auto snap = std::make_shared<model::Snapshot>(std::move(snapshot));
    size_t done = 0;
    for (const auto& d : snap->devices) {
        if (options.cancel && options.cancel->load()) throw model::Cancelled();
        if (options.progress) options.progress("rewinding", double(done++) / double(snap->devices.size()));
        out->timelines[d.device] = std::make_shared<model::DeviceTimeline>(model::computeTimeline(d));
        out->histories[d.device] = std::make_shared<model::StateHistory>(*snap, d.device);
        out->lifetimes[d.device] = std::make_shared<AllocationLifetimes>(AllocationLifetimes::compute(d));
    }
    out->snapshot = std::move(snap);
    return out;
}

std::shared_ptr<LoadedSnapshot> LoadedSnapshot::load(const std::string& path, const model::LoadOptions& options) {
    auto t0 = std::chrono::steady_clock::now();
    model::Snapshot snap = model::readSnapshotFile(path, options);
    if (options.cancel && options.cancel->load()) throw model::Cancelled();
    auto out = fromSnapshot(std::move(snap), path, options);
    if (options.progress) options.progress("rewinding", 1.0);
    out->loadSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return out;
}

} // namespace memlens::views
