#include "memlens/capture/RecorderClient.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace memlens::capture {

RecorderClient::RecorderClient(const std::string& socketPath, Options options) : options_(options) {
    fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0) throw ProtocolError(std::string("socket: ") + std::strerror(errno));
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (socketPath.size() >= sizeof addr.sun_path) {
        ::close(fd_);
        throw ProtocolError("socket path too long: " + socketPath);
    }
    std::strncpy(addr.sun_path, socketPath.c_str(), sizeof addr.sun_path - 1);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
        std::string err = std::strerror(errno);
        ::close(fd_);
        throw ProtocolError("cannot reach the recorder at " + socketPath + ": " + err);
    }
    ucred cred{};
    socklen_t len = sizeof cred;
    if (::getsockopt(fd_, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || cred.uid != ::getuid()) {
        ::close(fd_);
        throw ProtocolError("the recorder at " + socketPath + " runs as another user");
    }
    sender_ = std::thread([this] { sendLoop(); });
    reader_ = std::thread([this] { readLoop(); });
}

RecorderClient::~RecorderClient() {
    flush(std::chrono::seconds(60));
    {
        std::lock_guard<std::mutex> lock(mu_);
        stop_ = true;
    }
    cv_.notify_all();
    if (sender_.joinable()) sender_.join();
    // Wake the reader: shut our side down; the recorder sees the end of the stream.
    ::shutdown(fd_, SHUT_RDWR);
    if (reader_.joinable()) reader_.join();
    ::close(fd_);
}

bool RecorderClient::send(const nlohmann::json& head, std::string blob, bool mustKeep) {
    if (dead_) return false;
    Item item{encodeFrameStart(head, blob.size()), std::move(blob), 0};
    std::unique_lock<std::mutex> lock(mu_);
    if (queue_.empty() && !busy_ && item.blob.empty()) {
        // Straight out, without waiting: done before the caller goes on.
        size_t off = 0;
        while (off < item.start.size()) {
            ssize_t n = ::send(fd_, item.start.data() + off, item.start.size() - off, MSG_DONTWAIT | MSG_NOSIGNAL);
            if (n > 0) {
                off += static_cast<size_t>(n);
                continue;
            }
            if (n < 0 && errno == EINTR) continue;
            if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
            dead_ = true;
            return false;
        }
        if (off == item.start.size()) return true;
        item.start.erase(0, off);  // the rest goes first, from the sender thread
        queue_.push_front(std::move(item));
        cv_.notify_one();
        return true;
    }
    uint64_t bytes = item.start.size() + item.blob.size();
    if (!mustKeep && (queue_.size() >= options_.maxQueuedMessages ||
                      (item.blob.size() && queuedBytes_ + bytes > options_.maxQueuedBytes))) {
        ++dropped_;
        return false;
    }
    queuedBytes_ += bytes;
    queue_.push_back(std::move(item));
    cv_.notify_one();
    return true;
}

bool RecorderClient::writeAll(Item& item) {
    size_t startSent = 0;
    while (startSent < item.start.size() || item.blobSent < item.blob.size()) {
        iovec iov[2];
        int n = 0;
        if (startSent < item.start.size()) iov[n++] = {item.start.data() + startSent, item.start.size() - startSent};
        if (item.blobSent < item.blob.size()) iov[n++] = {item.blob.data() + item.blobSent, item.blob.size() - item.blobSent};
        msghdr msg{};
        msg.msg_iov = iov;
        msg.msg_iovlen = n;
        ssize_t w = ::sendmsg(fd_, &msg, MSG_NOSIGNAL);
        if (w < 0) {
            if (errno == EINTR) continue;
            return false;
        }
        size_t left = static_cast<size_t>(w);
        size_t a = std::min(left, item.start.size() - startSent);
        startSent += a;
        left -= a;
        item.blobSent += left;
    }
    return true;
}

void RecorderClient::sendLoop() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
        cv_.wait(lock, [&] { return !queue_.empty() || stop_; });
        if (queue_.empty()) return;
        Item item = std::move(queue_.front());
        queue_.pop_front();
        busy_ = true;
        lock.unlock();
        bool ok = !dead_ && writeAll(item);
        lock.lock();
        queuedBytes_ -= std::min<uint64_t>(queuedBytes_, item.start.size() + item.blob.size());
        busy_ = false;
        if (!ok) {
            dead_ = true;
            queue_.clear();
            queuedBytes_ = 0;
        }
        if (queue_.empty()) idle_.notify_all();
    }
}

bool RecorderClient::flush(std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mu_);
    return idle_.wait_for(lock, timeout, [&] { return (queue_.empty() && !busy_) || dead_; }) && !dead_;
}

void RecorderClient::readLoop() {
    std::string buf;
    char tmp[4096];
    for (;;) {
        ssize_t n = ::recv(fd_, tmp, sizeof tmp, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return;  // the recorder is gone, or we shut down
        buf.append(tmp, static_cast<size_t>(n));
        while (buf.size() >= kFrameHeaderBytes) {
            FrameHeader h;
            try {
                h = parseFrameHeader(buf.data());
            } catch (const ProtocolError&) {
                return;
            }
            if (buf.size() < kFrameHeaderBytes + h.jsonBytes + h.blobBytes) break;
            auto j = nlohmann::json::parse(buf.begin() + kFrameHeaderBytes,
                                           buf.begin() + kFrameHeaderBytes + h.jsonBytes, nullptr, false);
            if (j.is_object() && j.value("t", "") == "snapshot_request") snapshotRequested_ = true;
            buf.erase(0, kFrameHeaderBytes + h.jsonBytes + h.blobBytes);
        }
    }
}

} // namespace memlens::capture
