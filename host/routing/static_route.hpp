// GET and HEAD of a file under --www: checks the decoded path, opens the file beneath
// the root (or its precompressed sidecar), and answers 200 (small files copied into the
// output, large ones handed over to be sent from the file), 206 for one range, 304 and 412
// for conditional requests (ETag, Last-Modified), 416, 301 to a folder's slash, 403, 404 or 405.
#pragma once

#include "routing/exchange.hpp"
#include "routing/static_cache.hpp"
#include "routing/static_files.hpp"

namespace cspd {

/// Files at least this large are not copied into the output: their body is sent from the file.
inline constexpr std::size_t kStreamFileBytes = 256 * 1024;

struct StaticOptions {
    int max_age_s = -1;  ///< --static-max-age: Cache-Control: max-age; -1: none
};

/// Answers `exchange` from `www`. For a large file only the head is appended and `body_file`
/// is opened: its bytes (all, or the range) follow the head on the wire. With `cache`, small files
/// are answered from memory once read.
HttpStatus serve_static(const StaticFiles& www, Exchange& exchange, StaticFiles::File& body_file,
                        const StaticOptions& options = {}, StaticCache* cache = nullptr);

}  // namespace cspd
