#include "memlens/capture/SessionSink.h"

#include "memlens/model/SessionWriter.h"

#include <chrono>
#include <cstdio>

namespace memlens::capture {

using nlohmann::json;
using namespace memlens::model;

namespace {

int64_t num(const json& j, const char* k, int64_t fallback = 0) {
    auto it = j.find(k);
    if (it == j.end()) return fallback;
    if (it->is_number_integer() || it->is_number_unsigned()) return it->get<int64_t>();
    if (it->is_number_float()) return static_cast<int64_t>(it->get<double>());
    if (it->is_boolean()) return it->get<bool>() ? 1 : 0;
    return fallback;
}

std::optional<int64_t> optNum(const json& j, const char* k) {
    auto it = j.find(k);
    if (it == j.end() || it->is_null()) return std::nullopt;
    if (it->is_number()) return num(j, k);
    return std::nullopt;
}

std::string str(const json& j, const char* k, std::string fallback = {}) {
    auto it = j.find(k);
    if (it == j.end() || !it->is_string()) return fallback;
    return it->get<std::string>();
}

std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

json parseObject(const std::string& text) {
    json j = json::parse(text, nullptr, false);
    return j.is_object() ? j : json::object();
}

} // namespace

SessionSink::SessionSink(std::unique_ptr<SessionWriter> writer, SessionProcess initial, Options options)
    : writer_(std::move(writer)), process_(std::move(initial)), options_(options) {
    writeProcess();
    thread_ = std::thread([this] { run(); });
}

SessionSink::~SessionSink() { close(); }

void SessionSink::post(Message m) {
    uint64_t bytes = m.blob.size();
    std::unique_lock<std::mutex> lock(mu_);
    if (closing_) return;
    // Back pressure for snapshot bytes only: small records always go through.
    if (bytes > 0)
        space_.wait(lock, [&] { return queuedBytes_ == 0 || queuedBytes_ + bytes <= options_.maxQueuedBytes || closing_; });
    queuedBytes_ += bytes;
    if (queuedBytes_ > stats_.maxQueuedBytes) stats_.maxQueuedBytes = queuedBytes_;
    queue_.emplace_back(std::move(m));
    cv_.notify_one();
}

void SessionSink::postSamples(std::vector<DeviceSample> samples) {
    if (samples.empty()) return;
    std::lock_guard<std::mutex> lock(mu_);
    if (closing_) return;
    queue_.emplace_back(std::move(samples));
    cv_.notify_one();
}

void SessionSink::updateProcess(std::function<void(SessionProcess&)> change) {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_) return;
    queue_.emplace_back(std::move(change));
    cv_.notify_one();
}

void SessionSink::close() {
    {
        std::lock_guard<std::mutex> lock(mu_);
        closing_ = true;
        cv_.notify_all();
        space_.notify_all();
    }
    if (thread_.joinable()) thread_.join();
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_) return;
    closed_ = true;
    try {
        writeProcess();
        writer_->finish(sessionNowUs());
    } catch (const std::exception& e) {
        reportError(e.what());
    }
}

SessionSink::Stats SessionSink::stats() const {
    std::lock_guard<std::mutex> lock(mu_);
    Stats s = stats_;
    s.writeErrors = errors_.load();
    return s;
}

uint64_t SessionSink::queuedBytes() const {
    std::lock_guard<std::mutex> lock(mu_);
    return queuedBytes_;
}

void SessionSink::reportError(const std::string& what) {
    if (errors_.fetch_add(1) == 0 && !options_.quiet)
        std::fprintf(stderr, "memlens: cannot write the session %s: %s (the job goes on; later records may be lost)\n",
                     writer_->path().c_str(), what.c_str());
}

void SessionSink::writeProcess() {
    try {
        writer_->setProcess(process_);
    } catch (const std::exception& e) {
        reportError(e.what());
    }
}

void SessionSink::run() {
    auto lastBeat = std::chrono::steady_clock::now();
    auto small = [](const Item& i) {
        const Message* m = std::get_if<Message>(&i);
        return !m || m->blob.empty();
    };
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
        cv_.wait_for(lock, std::chrono::milliseconds(options_.heartbeatMs), [&] { return !queue_.empty() || closing_; });
        if (queue_.empty()) {
            if (closing_) return;
        } else {
            // Small records that are waiting together are written in one transaction (one commit
            // per record would cap a flood of markers at a few thousand per second).
            std::vector<Item> batch;
            batch.push_back(std::move(queue_.front()));
            queue_.pop_front();
            if (small(batch[0]))
                while (!queue_.empty() && small(queue_.front()) && batch.size() < 5000) {
                    batch.push_back(std::move(queue_.front()));
                    queue_.pop_front();
                }
            lock.unlock();
            uint64_t blobBytes = 0;
            bool grouped = batch.size() > 1;
            try {
                if (grouped) writer_->beginBatch();
                for (auto& item : batch) {
                    if (auto* m = std::get_if<Message>(&item)) {
                        blobBytes += m->blob.size();
                        apply(*m);
                    } else if (auto* s = std::get_if<std::vector<DeviceSample>>(&item)) {
                        writer_->addSamples(*s);
                        std::lock_guard<std::mutex> g(mu_);
                        stats_.samples += s->size();
                    } else if (auto* f = std::get_if<std::function<void(SessionProcess&)>>(&item)) {
                        (*f)(process_);
                        writer_->setProcess(process_);
                    }
                }
                if (grouped) writer_->commitBatch();
            } catch (const std::exception& e) {
                if (grouped) writer_->rollbackBatch();
                reportError(e.what());
            }
            batch.clear();  // frees the blobs before taking the lock
            lock.lock();
            queuedBytes_ -= blobBytes;
            if (blobBytes) space_.notify_all();
        }
        auto now = std::chrono::steady_clock::now();
        if (now - lastBeat >= std::chrono::milliseconds(options_.heartbeatMs)) {
            lastBeat = now;
            lock.unlock();
            try {
                writer_->heartbeat(sessionNowUs());
            } catch (const std::exception& e) {
                reportError(e.what());
            }
            lock.lock();
        }
    }
}

void SessionSink::applyProcessRecord(const json& h, const std::string& t) {
    SessionProcess& p = process_;
    json info = parseObject(p.infoJson);
    if (t == "hello") {
        int64_t pid = num(h, "pid");
        if (pid && p.pid && pid != p.pid) info["launcher_pid"] = p.pid;
        if (pid) p.pid = pid;
        if (p.command.empty() && h.contains("argv") && h["argv"].is_array())
            for (const auto& a : h["argv"])
                if (a.is_string()) p.command.push_back(a.get<std::string>());
        if (h.contains("argv")) info["argv"] = h["argv"];
        if (auto v = str(h, "python"); !v.empty()) p.python = v;
        if (auto v = str(h, "cwd"); !v.empty() && p.cwd.empty()) p.cwd = v;
        if (auto v = str(h, "host"); !v.empty() && p.host.empty()) p.host = v;
        if (auto v = str(h, "agent"); !v.empty()) info["agent"] = v;
        if (!p.startedUs) p.startedUs = num(h, "time_us");
    } else {
        if (h.contains("torch")) p.torch = str(h, "torch");
        if (h.contains("cuda")) p.cuda = str(h, "cuda");
        if (auto it = h.find("devices"); it != h.end() && it->is_array()) p.devicesJson = dump(*it);
        if (auto it = h.find("allocator_snapshots"); it != h.end() && it->is_boolean())
            p.allocatorSnapshots = it->get<bool>();
        if (h.contains("snapshots_note")) p.snapshotsNote = str(h, "snapshots_note");
        if (auto it = h.find("info"); it != h.end() && it->is_object())
            for (auto& [k, v] : it->items()) info[k] = v;
    }
    p.infoJson = dump(info);
    writer_->setProcess(p);
}

bool SessionSink::keeps(const Message& m) {
    const std::string t = m.type();
    if (firstSource_ < 0) firstSource_ = m.source;
    if (t == "hello" || t == "process") processRecords_[m.source].push_back(m.head);
    if (keptSource_ < 0 && t == "iteration") {
        const auto rank = m.head.find("rank");
        if (rank == m.head.end() || !rank->is_number_integer() || rank->get<int64_t>() == 0) {
            keptSource_ = m.source;
            if (m.source != firstSource_)  // a worker of the first process: its records replace the launcher's
                for (const json& r : processRecords_[m.source]) applyProcessRecord(r, r.value("t", ""));
            json info = parseObject(process_.infoJson);
            if (rank != m.head.end()) {
                info["rank"] = *rank;
                if (auto w = m.head.find("world_size"); w != m.head.end()) info["world_size"] = *w;
            }
            process_.infoJson = dump(info);
            writer_->setProcess(process_);
        }
    }
    const int64_t kept = keptSource_ >= 0 ? keptSource_ : firstSource_;
    keptNow_ = kept;
    return m.source == kept;
}

void SessionSink::apply(Message& m) {
    const json& h = m.head;
    std::string t = m.type();
    {
        std::lock_guard<std::mutex> g(mu_);
        ++stats_.messages;
    }
    if (!keeps(m)) {
        std::lock_guard<std::mutex> g(mu_);
        ++stats_.otherProcesses;
        return;
    }
    if (t == "iteration") {
        SessionIteration it{num(h, "index"), str(h, "phase", "other"), num(h, "start_us"), num(h, "end_us")};
        writer_->addIteration(it);
        lastIteration_ = std::max(lastIteration_, it.index);
        std::lock_guard<std::mutex> g(mu_);
        ++stats_.iterations;
    } else if (t == "snapshot") {
        SessionSnapshot s;
        s.iteration = num(h, "iteration", lastIteration_);
        s.trigger = str(h, "trigger", trigger::kRequest);
        s.timeUs = num(h, "time_us", sessionNowUs());
        if (auto it = h.find("info"); it != h.end() && it->is_object()) s.infoJson = dump(*it);
        auto t0 = std::chrono::steady_clock::now();
        writer_->addSnapshot(s, m.blob);
        double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        std::lock_guard<std::mutex> g(mu_);
        ++stats_.snapshots;
        stats_.snapshotBytes += m.blob.size();
        stats_.snapshotWriteSeconds += dt;
    } else if (t == "sample") {
        DeviceSample d;
        d.timeUs = num(h, "time_us", sessionNowUs());
        d.device = static_cast<int>(num(h, "device"));
        d.source = str(h, "source", "torch");
        d.processUsed = optNum(h, "process_used");
        d.deviceUsed = optNum(h, "device_used");
        d.deviceTotal = optNum(h, "device_total");
        d.reserved = optNum(h, "reserved");
        d.allocated = optNum(h, "allocated");
        writer_->addSamples({d});
        std::lock_guard<std::mutex> g(mu_);
        ++stats_.samples;
    } else if (t == "marker") {
        SessionMarker mk;
        mk.timeUs = num(h, "time_us", sessionNowUs());
        mk.iteration = num(h, "iteration", lastIteration_ + 1);
        mk.name = str(h, "name", "marker");
        if (auto it = h.find("data"); it != h.end() && !it->is_null()) mk.dataJson = dump(*it);
        writer_->addMarker(mk);
        std::lock_guard<std::mutex> g(mu_);
        ++stats_.markers;
    } else if (t == "graph_scan") {
        GraphScan g;
        g.iteration = num(h, "iteration", lastIteration_);
        g.phase = str(h, "phase");
        g.timeUs = num(h, "time_us", sessionNowUs());
        g.partial = num(h, "partial") != 0;
        if (auto it = h.find("scan"); it != h.end()) g.json = dump(*it);
        else g.json = m.blob;
        writer_->addGraphScan(g);
        std::lock_guard<std::mutex> lk(mu_);
        ++stats_.graphScans;
    } else if (t == "hello" || t == "process") {
        applyProcessRecord(h, t);
    } else if (t == "bye") {
        json info = parseObject(process_.infoJson);
        info["agent_exit"] = str(h, "reason", "exit");
        process_.infoJson = dump(info);
        writer_->setProcess(process_);
    }
    // Anything else: a newer agent's message; ignored.
}

} // namespace memlens::capture
