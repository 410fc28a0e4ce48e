// A body compressed in one content coding, with zlib (gzip), libbrotli (br) or libzstd (zstd),
// each at its fastest level: answers are compressed as they are sent, so CPU comes first, and
// even so each is smaller than gzip's at nginx's default. Engines without I/O.
#pragma once

#include "compression/content_coding.hpp"

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

namespace cspd {

/// The levels: gzip 1 (nginx's gzip_comp_level default), br 1, zstd 1.
inline constexpr int kGzipLevel = 1;
inline constexpr int kBrotliQuality = 1;
inline constexpr int kZstdLevel = 1;

/// Compresses `in` whole into `out` (replacing what it held) in `coding`, which is not identity.
/// Reuses this thread's contexts. False if the coder failed (no memory); `out` is then unusable.
bool encode_whole(ContentCoding coding, std::string_view in, std::string& out);

/// A body that comes in pieces (a stream): each piece can be flushed so that the client decodes
/// it at once. Its memory is bounded (kStreamCoderMemoryBound).
class BodyEncoder {
public:
    enum class Flush : std::uint8_t {
        none,    ///< the coder may keep bytes back for a better ratio
        sync,    ///< all of `in` can be decoded from what is out so far
        finish,  ///< the body ends here
    };
    /// Null if `coding` is identity or there is no memory for it.
    static std::unique_ptr<BodyEncoder> make(ContentCoding coding);
    virtual ~BodyEncoder() = default;
    /// Appends to `out` what `in` compresses to, as `flush` asks. False if the coder failed.
    virtual bool encode(std::string_view in, Flush flush, std::string& out) = 0;
    /// The bytes its library holds for it now (counted through the library's allocator hooks, or
    /// as the library counts them).
    virtual std::size_t memory() const { return memory_.held; }

    /// What a coder's library allocated through it: each block is prefixed by its size.
    struct Memory {
        std::size_t held = 0;
        void* allocate(std::size_t size);
        void release(void* block);
    };

protected:
    Memory memory_;
};

/// A stream's coder looks this far back: 8 KiB for gzip, 16 KiB for zstd, 64 KiB for br (whose
/// tables at quality 1 are small). Whatever the stream's length, its coder then holds about
/// 72 KiB (gzip), 92 KiB (br) or 150 KiB (zstd), measured by BodyEncoderTest; nginx's gzip
/// holds 256 KiB per answer at its defaults.
inline constexpr int kGzipStreamWindowBits = 13;
inline constexpr int kZstdStreamWindowLog = 14;
inline constexpr int kBrotliStreamWindowLog = 16;
/// What one stream's coder may hold at most, any coding (BodyEncoderTest checks it).
inline constexpr std::size_t kStreamCoderMemoryBound = 192 * 1024;

}  // namespace cspd
