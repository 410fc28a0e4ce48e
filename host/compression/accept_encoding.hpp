// Accept-Encoding (RFC 9110 §12.5.3): which coding an answer is sent in. A pure function of
// the field's text, with no I/O (fuzzed alone: tests/fuzz/accept_encoding_fuzz.cpp).
#pragma once

#include "compression/content_coding.hpp"

#include <optional>
#include <span>
#include <string_view>

namespace cspd {

/// The coding to answer in: among `offered` (the server's order of preference), the one the
/// client gives the highest q, the first offered on a tie; `*` stands for the codings it does not
/// name, and q=0 refuses one. Identity when the field is absent or empty, when nothing offered is
/// acceptable, or when the client gives identity a higher q than any offered coding. An element
/// that does not parse (a bad q-value) counts as absent; unknown codings are passed over.
ContentCoding choose_coding(std::optional<std::string_view> accept_encoding, std::span<const ContentCoding> offered);

}  // namespace cspd
