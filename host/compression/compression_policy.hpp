// What answers are compressed, and in which codings (--compress-*): read-only once the server
// runs, shared by every loop. Which answer gets which coding is decided per request from its
// Accept-Encoding (accept_encoding.hpp) and per answer from this (routing/answer_compression).
#pragma once

#include "compression/content_coding.hpp"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace cspd {

/// Where one event loop counts what it compressed (its stats slot's counters), or nowhere.
struct CompressionCounters {
    std::atomic<std::uint64_t>* responses = nullptr;  ///< three: gzip, br, zstd (ContentCoding - 1)
    std::atomic<std::uint64_t>* bytes_in = nullptr;
    std::atomic<std::uint64_t>* bytes_out = nullptr;

    /// An answer sent in `coding`, for which a coder took `in` bytes and gave `out` (0 and 0 for
    /// a body compressed earlier and kept).
    void count(ContentCoding coding, std::size_t in, std::size_t out) const {
        if (!responses || coding == ContentCoding::identity) return;
        responses[static_cast<std::size_t>(coding) - 1].fetch_add(1, std::memory_order_relaxed);
        if (in) bytes_in->fetch_add(in, std::memory_order_relaxed);
        if (out) bytes_out->fetch_add(out, std::memory_order_relaxed);
    }
};

struct CompressionPolicy {
    /// --compress-encodings, the server's order of preference; empty: off (--no-compress).
    std::vector<ContentCoding> encodings{ContentCoding::zstd, ContentCoding::br, ContentCoding::gzip};
    /// --compress-types: "type/subtype", "type/*" or "type/*+suffix", any case.
    std::vector<std::string> types{"text/*",          "application/json",  "application/*+json",
                                   "application/javascript", "application/xml", "application/*+xml",
                                   "image/svg+xml",   "application/wasm"};
    /// --compress-min-size: smaller bodies go as they are (a stream's length is unknown: compressed).
    std::size_t min_size = 512;
    /// Set by each loop on its own copy (Router::attach_stats).
    CompressionCounters counters;

    bool on() const { return !encodings.empty(); }
    /// Whether a body of `content_type` (parameters allowed: "text/html; charset=utf-8") is one of `types`.
    bool compressible_type(std::string_view content_type) const;
};

/// Whether `pattern` is one --compress-types takes: type/subtype, type/* or type/*+suffix.
bool valid_type_pattern(std::string_view pattern);

}  // namespace cspd
