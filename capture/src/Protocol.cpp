#include "memlens/capture/Protocol.h"

#include <cstring>

namespace memlens::capture {

std::string Message::type() const {
    auto it = head.find("t");
    return it != head.end() && it->is_string() ? it->get<std::string>() : std::string();
}

FrameHeader parseFrameHeader(const char* h) {
    if (std::memcmp(h, kFrameMagic, 4) != 0) throw ProtocolError("bad frame magic");
    FrameHeader f;
    for (int i = 3; i >= 0; --i) f.jsonBytes = (f.jsonBytes << 8) | static_cast<unsigned char>(h[4 + i]);
    for (int i = 7; i >= 0; --i) f.blobBytes = (f.blobBytes << 8) | static_cast<unsigned char>(h[8 + i]);
    if (f.jsonBytes == 0 || f.jsonBytes > kMaxJsonBytes) throw ProtocolError("bad frame: JSON length " + std::to_string(f.jsonBytes));
    if (f.blobBytes > kMaxBlobBytes) throw ProtocolError("bad frame: blob length " + std::to_string(f.blobBytes));
    return f;
}

std::string encodeFrameStart(const nlohmann::json& head, uint64_t blobBytes) {
    std::string js = head.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    std::string out(kFrameHeaderBytes, '\0');
    std::memcpy(out.data(), kFrameMagic, 4);
    uint32_t n = static_cast<uint32_t>(js.size());
    for (int i = 0; i < 4; ++i) out[4 + i] = static_cast<char>((n >> (8 * i)) & 0xff);
    for (int i = 0; i < 8; ++i) out[8 + i] = static_cast<char>((blobBytes >> (8 * i)) & 0xff);
    return out + js;
}

} // namespace memlens::capture
