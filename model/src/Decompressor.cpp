#include "Decompressor.h"

#include <lzma.h>
#include <zlib.h>
#include <zstd.h>

#include <cstring>

namespace memlens::model {

namespace {

// gzip, and concatenated gzip members (as `cat a.gz b.gz` makes them)
class GzipDecompressor final : public Decompressor {
public:
    GzipDecompressor() {
        std::memset(&z_, 0, sizeof z_);
        ok_ = inflateInit2(&z_, 15 + 16) == Z_OK;  // 16: a gzip wrapper
    }
    ~GzipDecompressor() override { inflateEnd(&z_); }

    int64_t run(const uint8_t*& in, size_t& inLen, uint8_t* out, size_t outLen, bool inputEnded, bool& streamEnd,
                std::string& error) override {
        if (!ok_) {
            error = "zlib could not start";
            return -1;
        }
        size_t written = 0;
        while (written < outLen) {
            if (inLen == 0) {
                if (inputEnded) streamEnd = !inMember_;
                break;
            }
            z_.next_in = const_cast<Bytef*>(in);
            z_.avail_in = static_cast<uInt>(std::min<size_t>(inLen, 1u << 30));
            z_.next_out = out + written;
            z_.avail_out = static_cast<uInt>(std::min<size_t>(outLen - written, 1u << 30));
            const uInt availIn = z_.avail_in, availOut = z_.avail_out;
            inMember_ = true;
            const int r = inflate(&z_, Z_NO_FLUSH);
            in += availIn - z_.avail_in;
            inLen -= availIn - z_.avail_in;
            written += availOut - z_.avail_out;
            if (r == Z_STREAM_END) {
                inMember_ = false;
                inflateReset(&z_);  // another member may follow
                continue;
            }
            if (r == Z_BUF_ERROR) break;  // needs more input or more room
            if (r != Z_OK) {
                error = std::string("the gzip data is corrupt (") + (z_.msg ? z_.msg : "inflate failed") + ")";
                return -1;
            }
        }
        return static_cast<int64_t>(written);
    }

private:
    z_stream z_;
    bool ok_ = false;
    bool inMember_ = false;
};

// zstd; its frames follow each other in one stream
class ZstdDecompressor final : public Decompressor {
public:
    ZstdDecompressor() : d_(ZSTD_createDStream()) {}
    ~ZstdDecompressor() override { ZSTD_freeDStream(d_); }

    int64_t run(const uint8_t*& in, size_t& inLen, uint8_t* out, size_t outLen, bool inputEnded, bool& streamEnd,
                std::string& error) override {
        if (!d_) {
            error = "libzstd could not start";
            return -1;
        }
        ZSTD_inBuffer ib{in, inLen, 0};
        ZSTD_outBuffer ob{out, outLen, 0};
        while (ob.pos < ob.size && ib.pos < ib.size) {
            const size_t r = ZSTD_decompressStream(d_, &ob, &ib);
            if (ZSTD_isError(r)) {
                error = std::string("the zstd data is corrupt (") + ZSTD_getErrorName(r) + ")";
                return -1;
            }
            inFrame_ = r != 0;  // 0: a frame is complete
        }
        in += ib.pos;
        inLen -= ib.pos;
        if (inLen == 0 && inputEnded && ob.pos < ob.size) {
            // the input is all in: flush what the decoder still holds of the last frame (a call
            // after a complete frame would start reading another one)
            if (inFrame_) {
                const size_t r = ZSTD_decompressStream(d_, &ob, &ib);
                if (ZSTD_isError(r)) {
                    error = std::string("the zstd data is corrupt (") + ZSTD_getErrorName(r) + ")";
                    return -1;
                }
                inFrame_ = r != 0;
            }
            if (ob.pos < ob.size) streamEnd = !inFrame_;
        }
        return static_cast<int64_t>(ob.pos);
    }

private:
    ZSTD_DStream* d_;
    bool inFrame_ = false;
};

// xz (and concatenated .xz streams)
class XzDecompressor final : public Decompressor {
public:
    XzDecompressor() { ok_ = lzma_stream_decoder(&s_, UINT64_MAX, LZMA_CONCATENATED) == LZMA_OK; }
    ~XzDecompressor() override { lzma_end(&s_); }

    int64_t run(const uint8_t*& in, size_t& inLen, uint8_t* out, size_t outLen, bool inputEnded, bool& streamEnd,
                std::string& error) override {
        if (!ok_) {
            error = "liblzma could not start";
            return -1;
        }
        s_.next_in = in;
        s_.avail_in = inLen;
        s_.next_out = out;
        s_.avail_out = outLen;
        lzma_ret r = LZMA_OK;
        while (s_.avail_out > 0) {
            const bool last = inputEnded && s_.avail_in == 0;
            if (s_.avail_in == 0 && !last) break;
            r = lzma_code(&s_, last ? LZMA_FINISH : LZMA_RUN);
            if (r == LZMA_STREAM_END) {
                streamEnd = true;
                break;
            }
            if (r == LZMA_BUF_ERROR && last) {
                error = "the xz stream ends early (truncated?)";
                return -1;
            }
            if (r != LZMA_OK && r != LZMA_BUF_ERROR) {
                error = r == LZMA_DATA_ERROR || r == LZMA_FORMAT_ERROR ? "the xz data is corrupt"
                        : r == LZMA_MEM_ERROR                          ? "liblzma ran out of memory"
                                                                       : "liblzma failed (error " + std::to_string(r) + ")";
                return -1;
            }
            if (r == LZMA_BUF_ERROR) break;
        }
        const size_t written = outLen - s_.avail_out;
        in += inLen - s_.avail_in;
        inLen = s_.avail_in;
        return static_cast<int64_t>(written);
    }

private:
    lzma_stream s_ = LZMA_STREAM_INIT;
    bool ok_ = false;
};

} // namespace

Decompressor::Format Decompressor::detect(std::span<const uint8_t> h) {
    if (h.size() >= 2 && h[0] == 0x1f && h[1] == 0x8b) return Format::Gzip;
    if (h.size() >= 4 && h[0] == 0x28 && h[1] == 0xb5 && h[2] == 0x2f && h[3] == 0xfd) return Format::Zstd;
    if (h.size() >= 6 && h[0] == 0xfd && h[1] == '7' && h[2] == 'z' && h[3] == 'X' && h[4] == 'Z' && h[5] == 0)
        return Format::Xz;
    return Format::None;
}

const char* Decompressor::formatName(Format f) {
    switch (f) {
    case Format::Gzip: return "gzip";
    case Format::Zstd: return "zstd";
    case Format::Xz: return "xz";
    case Format::None: break;
    }
    return "uncompressed";
}

std::unique_ptr<Decompressor> Decompressor::make(Format f) {
    switch (f) {
    case Format::Gzip: return std::make_unique<GzipDecompressor>();
    case Format::Zstd: return std::make_unique<ZstdDecompressor>();
    case Format::Xz: return std::make_unique<XzDecompressor>();
    case Format::None: break;
    }
    return nullptr;
}

} // namespace memlens::model
