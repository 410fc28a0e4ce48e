#include "compression/body_encoder.hpp"

#include <brotli/encode.h>
#include <zlib.h>
#include <zstd.h>

#include <cstdint>
#include <cstdlib>

namespace cspd {

void* BodyEncoder::Memory::allocate(std::size_t size) {
    auto* block = static_cast<std::size_t*>(std::malloc(size + sizeof(std::max_align_t)));
    if (!block) return nullptr;
    *block = size;
    held += size;
    return reinterpret_cast<char*>(block) + sizeof(std::max_align_t);
}

void BodyEncoder::Memory::release(void* pointer) {
    if (!pointer) return;
    auto* block = reinterpret_cast<std::size_t*>(static_cast<char*>(pointer) - sizeof(std::max_align_t));
    held -= *block;
    std::free(block);
}

namespace {

BodyEncoder::Memory& memory_of(void* opaque) { return *static_cast<BodyEncoder::Memory*>(opaque); }

/// Grows `out` by at least `room` bytes past `used` and returns where they start.
std::uint8_t* room_at(std::string& out, std::size_t used, std::size_t room) {
    if (out.size() < used + room) out.resize(used + room);
    return reinterpret_cast<std::uint8_t*>(out.data()) + used;
}

// ---- gzip: zlib's deflate with a gzip wrapper (windowBits + 16).
class GzipEncoder final : public BodyEncoder {
public:
    explicit GzipEncoder(int window_bits, int mem_level) {
        z_.opaque = &memory_;
        z_.zalloc = [](voidpf opaque, uInt items, uInt size) -> voidpf {
            return memory_of(opaque).allocate(std::size_t(items) * size);
        };
        z_.zfree = [](voidpf opaque, voidpf address) { memory_of(opaque).release(address); };
        ready_ = deflateInit2(&z_, kGzipLevel, Z_DEFLATED, window_bits + 16, mem_level, Z_DEFAULT_STRATEGY) == Z_OK;
    }
    ~GzipEncoder() override {
        if (ready_) deflateEnd(&z_);
    }
    bool ready() const { return ready_; }
    bool reset() { return deflateReset(&z_) == Z_OK; }

    bool encode(std::string_view in, Flush flush, std::string& out) override {
        if (!ready_) return false;
        const int mode = flush == Flush::finish ? Z_FINISH : flush == Flush::sync ? Z_SYNC_FLUSH : Z_NO_FLUSH;
        z_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
        z_.avail_in = static_cast<uInt>(in.size());
        std::size_t used = out.size();
        for (;;) {
            const std::size_t room = deflateBound(&z_, z_.avail_in) + 16;
            z_.next_out = room_at(out, used, room);
            z_.avail_out = static_cast<uInt>(room);
            const int status = deflate(&z_, mode);
            used += room - z_.avail_out;
            if (status == Z_STREAM_END) break;
            if (status != Z_OK && status != Z_BUF_ERROR) {
                out.resize(used);
                return false;
            }
            // Done when the input is taken and deflate had room to spare (all flushed).
            if (z_.avail_in == 0 && z_.avail_out != 0) break;
        }
        out.resize(used);
        return true;
    }

private:
    z_stream z_{};
    bool ready_ = false;
};

// ---- br: a streaming brotli instance.
class BrotliEncoder final : public BodyEncoder {
public:
    explicit BrotliEncoder(int window_log)
        : state_(BrotliEncoderCreateInstance(
              [](void* opaque, std::size_t size) { return memory_of(opaque).allocate(size); },
              [](void* opaque, void* address) { memory_of(opaque).release(address); }, &memory_)) {
        if (!state_) return;
        BrotliEncoderSetParameter(state_, BROTLI_PARAM_QUALITY, kBrotliQuality);
        BrotliEncoderSetParameter(state_, BROTLI_PARAM_LGWIN, static_cast<std::uint32_t>(window_log));
    }
    ~BrotliEncoder() override {
        if (state_) BrotliEncoderDestroyInstance(state_);
    }
    bool ready() const { return state_ != nullptr; }

    bool encode(std::string_view in, Flush flush, std::string& out) override {
        if (!state_) return false;
        const BrotliEncoderOperation op = flush == Flush::finish ? BROTLI_OPERATION_FINISH
                                          : flush == Flush::sync ? BROTLI_OPERATION_FLUSH
                                                                 : BROTLI_OPERATION_PROCESS;
        std::size_t available_in = in.size();
        const std::uint8_t* next_in = reinterpret_cast<const std::uint8_t*>(in.data());
        std::size_t used = out.size();
        for (;;) {
            const std::size_t room = available_in + (available_in >> 3) + 1024;
            std::size_t available_out = room;
            std::uint8_t* next_out = room_at(out, used, room);
            if (!BrotliEncoderCompressStream(state_, op, &available_in, &next_in, &available_out, &next_out, nullptr)) {
                out.resize(used);
                return false;
            }
            used += room - available_out;
            const bool all_in = available_in == 0 && !BrotliEncoderHasMoreOutput(state_);
            if (op == BROTLI_OPERATION_FINISH ? BrotliEncoderIsFinished(state_) : all_in) break;
        }
        out.resize(used);
        return true;
    }

private:
    BrotliEncoderState* state_;
};

// ---- zstd: a compression context, one frame per body.
class ZstdEncoder final : public BodyEncoder {
public:
    explicit ZstdEncoder(int window_log) : cctx_(ZSTD_createCCtx()) {
        if (!cctx_) return;
        ZSTD_CCtx_setParameter(cctx_, ZSTD_c_compressionLevel, kZstdLevel);
        if (window_log) {
            // Its buffers follow the window; a smaller hash table costs little at level 1.
            ZSTD_CCtx_setParameter(cctx_, ZSTD_c_windowLog, window_log);
            ZSTD_CCtx_setParameter(cctx_, ZSTD_c_hashLog, 12);
        }
    }
    ~ZstdEncoder() override { ZSTD_freeCCtx(cctx_); }
    std::size_t memory() const override { return ZSTD_sizeof_CCtx(cctx_); }  // zstd's own count
    bool ready() const { return cctx_ != nullptr; }
    ZSTD_CCtx* context() { return cctx_; }

    bool encode(std::string_view in, Flush flush, std::string& out) override {
        if (!cctx_) return false;
        const ZSTD_EndDirective mode = flush == Flush::finish ? ZSTD_e_end
                                       : flush == Flush::sync ? ZSTD_e_flush
                                                              : ZSTD_e_continue;
        ZSTD_inBuffer input{in.data(), in.size(), 0};
        std::size_t used = out.size();
        for (;;) {
            const std::size_t room = ZSTD_compressBound(input.size - input.pos) + 64;
            ZSTD_outBuffer output{room_at(out, used, room), room, 0};
            const std::size_t left = ZSTD_compressStream2(cctx_, &output, &input, mode);
            used += output.pos;
            if (ZSTD_isError(left)) {
                out.resize(used);
                return false;
            }
            if (mode == ZSTD_e_continue ? input.pos == input.size : left == 0) break;
        }
        out.resize(used);
        return true;
    }

private:
    ZSTD_CCtx* cctx_;
};

}  // namespace

bool encode_whole(ContentCoding coding, std::string_view in, std::string& out) {
    out.clear();
    switch (coding) {
    case ContentCoding::gzip: {
        // zlib's defaults (a 32 KiB window): the same bytes as nginx's at the same level.
        thread_local GzipEncoder gzip(15, 8);
        return gzip.ready() && gzip.reset() && gzip.encode(in, BodyEncoder::Flush::finish, out);
    }
    case ContentCoding::br: {
        // One call, its window fitted to the body (brotli's own one-shot).
        std::size_t size = BrotliEncoderMaxCompressedSize(in.size());
        if (size == 0) size = in.size() + 1024;
        out.resize(size);
        const bool ok = BrotliEncoderCompress(kBrotliQuality, BROTLI_DEFAULT_WINDOW, BROTLI_MODE_GENERIC, in.size(),
                                              reinterpret_cast<const std::uint8_t*>(in.data()), &size,
                                              reinterpret_cast<std::uint8_t*>(out.data())) == BROTLI_TRUE;
        out.resize(ok ? size : 0);
        return ok;
    }
    case ContentCoding::zstd: {
        // One frame with the body's size in it: zstd fits its tables to it.
        thread_local ZstdEncoder zstd(0);
        if (!zstd.ready()) return false;
        out.resize(ZSTD_compressBound(in.size()));
        const std::size_t size = ZSTD_compress2(zstd.context(), out.data(), out.size(), in.data(), in.size());
        if (ZSTD_isError(size)) return false;
        out.resize(size);
        return true;
    }
    case ContentCoding::identity: break;
    }
    return false;
}

std::unique_ptr<BodyEncoder> BodyEncoder::make(ContentCoding coding) {
    switch (coding) {
    case ContentCoding::gzip: {
        // 8 KiB back, hash tables of 2^12 entries: 64 KiB in all (zlib's formula), not 256.
        auto encoder = std::make_unique<GzipEncoder>(kGzipStreamWindowBits, 6);
        return encoder->ready() ? std::move(encoder) : nullptr;
    }
    case ContentCoding::br: {
        auto encoder = std::make_unique<BrotliEncoder>(kBrotliStreamWindowLog);
        return encoder->ready() ? std::move(encoder) : nullptr;
    }
    case ContentCoding::zstd: {
        auto encoder = std::make_unique<ZstdEncoder>(kZstdStreamWindowLog);
        return encoder->ready() ? std::move(encoder) : nullptr;
    }
    case ContentCoding::identity: break;
    }
    return nullptr;
}

}  // namespace cspd
