#pragma once
// The recorder's socket: a fresh 0700 directory (under $XDG_RUNTIME_DIR, $TMPDIR or /tmp) holding
// agent.sock, listening; the directory, with anything else written into it (attach's injected
// script), is removed however the recorder leaves.
#include <string>

namespace memlens::capture {

struct SocketDir {
    std::string dir, path;
    int fd = -1;
    SocketDir() = default;
    SocketDir(const SocketDir&) = delete;
    SocketDir& operator=(const SocketDir&) = delete;
    ~SocketDir();
};

// Throws RecorderError when no directory or socket can be made.
void makeSocket(SocketDir& s);

} // namespace memlens::capture
