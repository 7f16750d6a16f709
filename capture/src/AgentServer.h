#pragma once
// The recorder's end of the agents' socket (memlens-cli record and attach): accepts this user's
// agents, reads their frames (Protocol.h) and hands them to the session sink; sends them the
// recorder's requests (a snapshot, a detach). One thread; idle connections are swept, not polled.
#include "memlens/capture/Protocol.h"
#include "memlens/capture/Recorder.h"
#include "memlens/capture/SessionSink.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace memlens::capture {

class AgentServer {
    using json = nlohmann::json;
    using Clock = std::chrono::steady_clock;

public:
    AgentServer(int listenFd, SessionSink& sink, bool quiet) : listen_(listenFd), sink_(sink), quiet_(quiet) {
        if (::pipe2(wake_, O_CLOEXEC | O_NONBLOCK) != 0) throw RecorderError(std::string("pipe: ") + std::strerror(errno));
        thread_ = std::thread([this] { run(); });
    }
    ~AgentServer() {
        stop();
        ::close(wake_[0]);
        ::close(wake_[1]);
    }

    void stop() {
        stop_ = true;
        wake();
        if (thread_.joinable()) thread_.join();
    }
    void requestSnapshot() {
        snapshotRequest_ = true;
        wake();
    }
    // memlens-cli attach: asks the agents to detach (Agent.detach in the Python agent).
    void requestDetach() {
        detachRequest_ = true;
        wake();
    }
    // The reason of the last goodbye an agent sent ("exit", "detach"; "" before any).
    std::string byeReason() const {
        std::lock_guard<std::mutex> lock(mu_);
        return byeReason_;
    }
    // What an attached agent said about its start: "attached", or "attach_refused" with why.
    // Neither goes into the session.
    std::optional<json> attachReply() const {
        std::lock_guard<std::mutex> lock(mu_);
        return attachReply_;
    }
    uint64_t loops() const { return loops_; }
    int openConnections() const { return open_; }
    bool busy() const { return inPost_; }
    Clock::time_point lastActivity() const {
        std::lock_guard<std::mutex> lock(mu_);
        return lastActivity_;
    }
    std::set<int64_t> agentPids() const {
        std::lock_guard<std::mutex> lock(mu_);
        return pids_;
    }
    bool anyAgent() const { return anyAgent_; }

private:
    struct Conn {
        int fd = -1;
        int64_t id = 0;    // the order it connected in, from 1: the messages' source
        std::string head;  // the 16-byte header, then the JSON text
        FrameHeader frame;
        bool haveHeader = false;
        std::string blob;
        uint64_t blobGot = 0;
        bool streaming = false;  // mid-frame, or more was waiting: poll it
        bool failed = false;
    };

    void wake() {
        char c = 1;
        (void)!::write(wake_[1], &c, 1);
    }

    void touch() {
        std::lock_guard<std::mutex> lock(mu_);
        lastActivity_ = Clock::now();
    }

    void accept() {
        for (;;) {
            int fd = ::accept4(listen_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
            if (fd < 0) return;
            ucred cred{};
            socklen_t len = sizeof cred;
            if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || cred.uid != ::getuid()) {
                if (!quiet_) std::fprintf(stderr, "memlens: refused a connection from uid %u\n", unsigned(cred.uid));
                ::close(fd);
                continue;
            }
            Conn c;
            c.fd = fd;
            c.id = ++connections_;
            conns_.push_back(std::move(c));
            open_ = static_cast<int>(conns_.size());
            touch();
        }
    }

    // Completes one frame: hands it to the sink.
    void deliver(Conn& c) {
        Message m;
        m.head = json::parse(c.head.begin() + kFrameHeaderBytes, c.head.end(), nullptr, false);
        if (!m.head.is_object()) throw ProtocolError("bad frame: the JSON part is not an object");
        m.blob = std::move(c.blob);
        m.source = c.id;
        c.head.clear();
        c.blob.clear();
        c.blobGot = 0;
        c.haveHeader = false;
        std::string t = m.type();
        if (t == "attached" || t == "attach_refused") {
            std::lock_guard<std::mutex> lock(mu_);
            if (!attachReply_) attachReply_ = m.head;
            return;
        }
        if (t == "bye") {
            std::lock_guard<std::mutex> lock(mu_);
            byeReason_ = m.head.value("reason", "");
        }
        if (t == "hello") {
            anyAgent_ = true;
            if (auto it = m.head.find("pid"); it != m.head.end() && it->is_number_integer()) {
                std::lock_guard<std::mutex> lock(mu_);
                pids_.insert(it->get<int64_t>());
            }
        }
        inPost_ = true;
        sink_.post(std::move(m));
        inPost_ = false;
        touch();
    }

    // Reads what is available; false when the connection ended.
    bool readFrom(Conn& c) {
        char buf[65536];
        size_t budget = 64u << 20;  // then give the others a turn
        c.streaming = true;
        while (budget > 0) {
            if (c.haveHeader && c.head.size() == kFrameHeaderBytes + c.frame.jsonBytes && c.blobGot < c.frame.blobBytes) {
                // Blob bytes go straight into the blob.
                uint64_t want = std::min<uint64_t>(c.frame.blobBytes - c.blobGot, 8u << 20);
                ssize_t n = ::recv(c.fd, c.blob.data() + c.blobGot, want, 0);
                if (n == 0) return false;
                if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;  // mid-frame
                c.blobGot += static_cast<uint64_t>(n);
                budget -= std::min<size_t>(budget, static_cast<size_t>(n));
                touch();
                if (c.blobGot == c.frame.blobBytes) deliver(c);
                continue;
            }
            size_t need = !c.haveHeader ? kFrameHeaderBytes - c.head.size()
                                        : kFrameHeaderBytes + c.frame.jsonBytes - c.head.size();
            ssize_t n = ::recv(c.fd, buf, std::min(need, sizeof buf), 0);
            if (n == 0) return false;
            if (n < 0) {
                c.streaming = !c.head.empty();  // between frames: idle until the next sweep
                return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
            }
            budget -= std::min<size_t>(budget, static_cast<size_t>(n));
            c.head.append(buf, static_cast<size_t>(n));
            if (!c.haveHeader && c.head.size() == kFrameHeaderBytes) {
                c.frame = parseFrameHeader(c.head.data());
                c.haveHeader = true;
            }
            if (c.haveHeader && c.head.size() == kFrameHeaderBytes + c.frame.jsonBytes) {
                if (c.frame.blobBytes == 0) {
                    deliver(c);
                } else {
                    c.blob.resize(c.frame.blobBytes);
                    c.blobGot = 0;
                }
            }
        }
        return true;
    }

    void sendToAll(const json& head) {
        std::string frame = encodeFrameStart(head, 0);
        for (auto& c : conns_) (void)!::send(c.fd, frame.data(), frame.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
    }

    // To the process whose records the session keeps (all agents, before any has spoken):
    // another rank's snapshot would be dropped anyway.
    void sendRequests() {
        std::string frame = encodeFrameStart(json{{"t", "snapshot_request"}}, 0);
        const int64_t kept = sink_.keptSource();
        for (auto& c : conns_)
            if (kept == 0 || c.id == kept) (void)!::send(c.fd, frame.data(), frame.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
    }

    // Idle connections are not polled but read every kSweepMs: a job's small messages then cost
    // it a send() that wakes nobody (and once sent they survive the job being killed). A
    // connection in the middle of a frame, or with more waiting, is polled and read at once.
    static constexpr int kSweepMs = 20;

    void run() {
        std::vector<pollfd> fds;
        std::vector<size_t> polled;
        while (!stop_) {
            fds.clear();
            polled.clear();
            fds.push_back({wake_[0], POLLIN, 0});
            fds.push_back({listen_, POLLIN, 0});
            for (size_t i = 0; i < conns_.size(); ++i)
                if (conns_[i].streaming) {
                    fds.push_back({conns_[i].fd, POLLIN, 0});
                    polled.push_back(i);
                }
            int r = ::poll(fds.data(), fds.size(), kSweepMs);
            ++loops_;
            if (r < 0 && errno != EINTR) break;
            if (fds[0].revents) {
                char drain[64];
                while (::read(wake_[0], drain, sizeof drain) > 0) {
                }
            }
            if (fds[1].revents & POLLIN) accept();
            // a request that came before the agent connected waits for it (the job may still be
            // starting, or its connection not yet accepted)
            if (!conns_.empty() && snapshotRequest_.exchange(false)) sendRequests();
            if (!conns_.empty() && detachRequest_.exchange(false)) sendToAll(json{{"t", "detach"}});
            for (size_t k = 0; k < polled.size(); ++k)
                if (fds[2 + k].revents & (POLLERR | POLLNVAL)) conns_[polled[k]].failed = true;
            for (auto& c : conns_) {
                bool alive = !c.failed;
                try {
                    alive = alive && readFrom(c);
                } catch (const std::exception& e) {
                    if (!quiet_) std::fprintf(stderr, "memlens: dropped an agent connection: %s\n", e.what());
                    alive = false;
                }
                if (!alive) {
                    ::close(c.fd);
                    c.fd = -1;
                    touch();
                }
            }
            std::erase_if(conns_, [](const Conn& c) { return c.fd < 0; });
            open_ = static_cast<int>(conns_.size());
        }
        // A frame cut short here is the record being written when the job or the recorder ended.
        for (auto& c : conns_) ::close(c.fd);
        conns_.clear();
        open_ = 0;
    }

    int listen_;
    SessionSink& sink_;
    bool quiet_;
    int wake_[2] = {-1, -1};
    std::vector<Conn> conns_;
    int64_t connections_ = 0;
    std::atomic<bool> stop_{false}, snapshotRequest_{false}, detachRequest_{false}, inPost_{false}, anyAgent_{false};
    std::atomic<uint64_t> loops_{0};
    std::atomic<int> open_{0};
    mutable std::mutex mu_;
    Clock::time_point lastActivity_ = Clock::now();
    std::set<int64_t> pids_;
    std::optional<json> attachReply_;
    std::string byeReason_;
    std::thread thread_;
};

// Removes the socket directory however runRecorder leaves.
} // namespace memlens::capture
