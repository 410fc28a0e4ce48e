// GET and HEAD of a file under --www: checks the decoded path, opens the file beneath
// the root (or its precompressed sidecar), and answers 200 (small files copied into the
// output, large ones handed over to be sent from the file), 206 for one range, 304 and 412
// for conditional requests (ETag, Last-Modified), 416, 301 to a folder's slash, 403, 404 or 405.
#pragma once

#include "routing/answer_compression.hpp"
#include "routing/compressed_files.hpp"
#include "routing/exchange.hpp"
#include "routing/static_cache.hpp"
#include "routing/static_files.hpp"

#include <string>

namespace cspd {

/// Files at least this large are not copied into the output: their body is sent from the file.
inline constexpr std::size_t kStreamFileBytes = 256 * 1024;

struct StaticOptions {
    int max_age_s = -1;  ///< --static-max-age: Cache-Control: max-age; -1: none
};

/// What serve_static needs to compress a file that has no sidecar, and what it did.
struct StaticCompression {
    const CompressionPolicy* policy = nullptr;  ///< --compress-*; null: never
    CompressedFiles* kept = nullptr;            ///< the loop's compressed files
};

/// Answers `exchange` from `www`. For a large file the answer's body is the file's
/// (BodyKind::file) and `body_file` is opened: its bytes (all, or the range) follow the head on
/// the wire. With `cache`, small files are answered from memory once read; `scratch` (reused by
/// the caller) holds a file read for one answer. With `compression`, a file of a compressible type
/// without a sidecar, up to CompressedFiles::kMaxFileBytes, is sent compressed as a handler's answer
/// is (routing/answer_compression.hpp), except to a Range request (206 stays identity).
HttpStatus serve_static(const StaticFiles& www, Exchange& exchange, StaticFiles::File& body_file,
                        const StaticOptions& options = {}, StaticCache* cache = nullptr,
                        std::string* scratch = nullptr, StaticCompression* compression = nullptr);

}  // namespace cspd
