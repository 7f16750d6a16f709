#include "core/LoadedSnapshot.h"

#include "memlens/model/ParseError.h"
#include "memlens/model/SnapshotReader.h"

#include <chrono>
#include <future>

namespace memlens::views {

std::shared_ptr<LoadedSnapshot> LoadedSnapshot::fromSnapshot(model::Snapshot snapshot, std::string path,
                                                             const model::LoadOptions& options, StateHistories when) {
    auto out = std::make_shared<LoadedSnapshot>();
    out->path = std::move(path);
    auto snap = std::make_shared<model::Snapshot>(std::move(snapshot));
    const auto cancelled = [&options] { return options.cancel && options.cancel->load(); };
    // Two threads. The second builds the state histories (the checkpoints of the allocator
    // state), or with StateHistories::Later the final states; this one computes the timelines and
    // what else the timeline draws, and (histories built here) the lifetimes. With Later, the
    // document pairs the lifetimes once the timeline is drawn, and the final states are not
    // waited for. On the 605 MB repeated real trace, each alone: timeline 33-46 ms, what it draws
    // besides 23-29 ms, final state 130-170 ms, lifetimes 180-250 ms (bench README, "The
    // timeline's own work after the read"). Only this thread reports progress.
    const bool later = when == StateHistories::Later;
    if (later) {
        // The final states, on the second thread, are not waited for: the document picks them up
        // (finalStatesLater) while the window draws the curves. The thread holds its own share of
        // the snapshot; whoever drops the last share of the future waits for it (100-190 ms).
        out->finalStatesLater = std::async(std::launch::async, [snap]() -> FinalStates {
                                    FinalStates r;
                                    for (const auto& d : snap->devices)
                                        r[d.device] = std::make_shared<const model::DeviceState>(
                                            model::finalDeviceState(*snap, d.device));
                                    return r;
                                }).share();
    }
    std::future<std::map<int, std::shared_ptr<const model::StateHistory>>> second;
    if (!later)
        second = std::async(std::launch::async, [&snap, &cancelled] {
            std::map<int, std::shared_ptr<const model::StateHistory>> r;
            for (const auto& d : snap->devices) {
                if (cancelled()) break;
                r[d.device] = std::make_shared<model::StateHistory>(*snap, d.device);
            }
            return r;
        });
    size_t done = 0;
    try {
        for (const auto& d : snap->devices) {
            if (cancelled()) break;
            if (options.progress) options.progress("rewinding", double(done++) / double(snap->devices.size()));
            auto timeline = std::make_shared<const model::DeviceTimeline>(model::computeTimeline(d));
            out->timelineExtras[d.device] =
                std::make_shared<const TimelineExtras>(TimelineExtras::compute(*snap, d.device, *timeline));
            out->timelines[d.device] = std::move(timeline);
            if (!later) out->lifetimes[d.device] = std::make_shared<AllocationLifetimes>(AllocationLifetimes::compute(d));
        }
    } catch (...) {
        if (second.valid()) second.wait();  // it reads snap: let it finish before the exception unwinds it
        throw;
    }
    if (second.valid()) out->histories = second.get();
    if (cancelled()) throw model::Cancelled();
    out->snapshot = std::move(snap);
    return out;
}

std::shared_ptr<LoadedSnapshot> LoadedSnapshot::load(const std::string& path, const model::LoadOptions& options,
                                                     StateHistories histories) {
    auto t0 = std::chrono::steady_clock::now();
    model::Snapshot snap = model::readSnapshotFile(path, options);
    if (options.cancel && options.cancel->load()) throw model::Cancelled();
    auto out = fromSnapshot(std::move(snap), path, options, histories);
    if (options.progress) options.progress("rewinding", 1.0);
    out->loadSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return out;
}

} // namespace memlens::views
