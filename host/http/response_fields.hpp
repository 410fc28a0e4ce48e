// An HTTP/1.1 response head, as the routes write it, read back as fields for a protocol that
// sends them another way (HTTP/2's HEADERS frame): the status code, and each field with its
// name in lower case (RFC 9113 §8.2), without the fields that belong to an HTTP/1 connection
// and must not cross into HTTP/2 (RFC 9113 §8.2.2: Connection, Keep-Alive, Transfer-Encoding...).
// The routes stay protocol-neutral in what they decide and write one format; this is the one
// place that format is read back. No I/O, so it is tested and fuzzed alone.
#pragma once

#include "http/request.hpp"

#include <cstddef>
#include <string>
#include <vector>

namespace cspd {

struct ResponseFields {
    int status = 0;
    /// Views into the head that was read (its names lowered in place).
    std::vector<HttpHeader> fields;
    /// The head's length, blank line included: the body follows it.
    std::size_t head_size = 0;
};

/// Reads the head at the start of `bytes`, lowering each field name where it is. False if
/// `bytes` does not begin with a whole, well-formed head (the status line, "Name: value" lines,
/// the blank line).
bool read_response_head(std::string& bytes, ResponseFields& into);

}  // namespace cspd
