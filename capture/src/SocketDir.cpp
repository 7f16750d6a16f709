#include "SocketDir.h"

#include "memlens/capture/Recorder.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <system_error>
#include <vector>

namespace memlens::capture {

SocketDir::~SocketDir() {
    if (fd >= 0) ::close(fd);
    // the directory with what else was written into it (attach's injected script): rmdir alone
    // left it behind, one in /tmp per attach
    std::error_code ec;
    if (!dir.empty()) std::filesystem::remove_all(dir, ec);
}

void makeSocket(SocketDir& s) {
    std::vector<std::string> bases;
    for (const char* v : {"XDG_RUNTIME_DIR", "TMPDIR"})
        if (const char* e = std::getenv(v); e && *e) bases.push_back(e);
    bases.push_back("/tmp");
    for (const auto& base : bases) {
        std::string tmpl = base + "/memlens-XXXXXX";
        if (tmpl.size() + 12 >= sizeof(sockaddr_un::sun_path)) continue;
        if (!::mkdtemp(tmpl.data())) continue;  // mkdtemp makes it 0700
        s.dir = tmpl;
        break;
    }
    if (s.dir.empty()) throw RecorderError(std::string("cannot create a socket directory: ") + std::strerror(errno));
    ::chmod(s.dir.c_str(), 0700);
    s.path = s.dir + "/agent.sock";
    s.fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (s.fd < 0) throw RecorderError(std::string("socket: ") + std::strerror(errno));
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, s.path.c_str(), sizeof addr.sun_path - 1);
    if (::bind(s.fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(s.fd, 16) != 0)
        throw RecorderError("cannot listen on " + s.path + ": " + std::strerror(errno));
    ::chmod(s.path.c_str(), 0600);
}

} // namespace memlens::capture
