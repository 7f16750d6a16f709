#pragma once
// Internal to ByteReader: a compressed snapshot (gzip, zstd or xz, recognised by its magic bytes,
// whatever its name) decompressed as a stream, chunk by chunk, with Debian's zlib, libzstd and
// liblzma: never a temporary copy on disk, never the whole file in memory.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

namespace memlens::model {

class Decompressor {
public:
    enum class Format { None, Gzip, Zstd, Xz };
    // The format the first bytes of a file announce (None: not compressed, or not one of these).
    static Format detect(std::span<const uint8_t> head);
    static const char* formatName(Format f);
    static std::unique_ptr<Decompressor> make(Format f);

    virtual ~Decompressor() = default;
    // Decompresses from [in, in + inLen) into [out, out + outLen): advances in and inLen past what
    // it consumed and returns the bytes written. inputEnded: no input follows what is given. Sets
    // streamEnd once the compressed stream (every concatenated member or frame) has ended with
    // the input. On corrupt data returns -1 and sets error (one line).
    virtual int64_t run(const uint8_t*& in, size_t& inLen, uint8_t* out, size_t outLen, bool inputEnded,
                        bool& streamEnd, std::string& error) = 0;
};

} // namespace memlens::model
