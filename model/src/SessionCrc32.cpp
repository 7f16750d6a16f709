// CRC-32 (polynomial 0xEDB88320, as zlib), slicing by 8: about 1-2 GB/s, so checking a snapshot
// of hundreds of MB costs a fraction of reading it.
#include "memlens/model/SessionData.h"

#include <array>
#include <bit>
#include <cstring>

namespace memlens::model {

static_assert(std::endian::native == std::endian::little, "crc32Update assumes a little-endian host");

namespace {

struct Tables {
    std::array<std::array<uint32_t, 256>, 8> t{};
    Tables() {
        for (uint32_t i = 0; i < 256; ++i) {
            uint32_t c = i;
            for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
            t[0][i] = c;
        }
        for (uint32_t i = 0; i < 256; ++i)
            for (int s = 1; s < 8; ++s) t[s][i] = (t[s - 1][i] >> 8) ^ t[0][t[s - 1][i] & 0xff];
    }
};

const Tables& tables() {
    static const Tables t;
    return t;
}

} // namespace

uint32_t crc32Update(uint32_t crc, const void* data, size_t size) {
    const auto& t = tables().t;
    const unsigned char* p = static_cast<const unsigned char*>(data);
    crc = ~crc;
    while (size >= 8) {
        uint32_t lo, hi;
        std::memcpy(&lo, p, 4);
        std::memcpy(&hi, p + 4, 4);
        lo ^= crc;  // little-endian hosts (x86-64, aarch64)
        crc = t[7][lo & 0xff] ^ t[6][(lo >> 8) & 0xff] ^ t[5][(lo >> 16) & 0xff] ^ t[4][lo >> 24] ^
              t[3][hi & 0xff] ^ t[2][(hi >> 8) & 0xff] ^ t[1][(hi >> 16) & 0xff] ^ t[0][hi >> 24];
        p += 8;
        size -= 8;
    }
    while (size--) crc = t[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
    return ~crc;
}

} // namespace memlens::model
