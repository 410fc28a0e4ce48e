// libFuzzer target: Accept-Encoding (compression/accept_encoding). Whatever the field holds, the
// choice is one of the codings offered or identity, and never one the field refuses by name
// with q=0 when nothing else names it; the same text with its elements' whitespace changed
// chooses the same.
#include "compression/accept_encoding.hpp"

#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

namespace {
void check(bool ok) {
    if (!ok) std::abort();
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using cspd::ContentCoding;
    if (size == 0) return 0;
    // The first byte picks the server's offer (order and subset); the rest is the field.
    const std::uint8_t pick = data[0];
    std::vector<ContentCoding> offered;
    const ContentCoding all[] = {ContentCoding::zstd, ContentCoding::br, ContentCoding::gzip};
    for (int i = 0; i < 3; ++i)
        if (pick & (1 << i)) offered.push_back(all[(i + (pick >> 3)) % 3]);
    const std::string_view field(reinterpret_cast<const char*>(data + 1), size - 1);
    const ContentCoding chosen = cspd::choose_coding(field, offered);
    bool offered_or_identity = chosen == ContentCoding::identity;
    for (const ContentCoding c : offered) offered_or_identity = offered_or_identity || c == chosen;
    check(offered_or_identity);
    // Spaces after commas and around semicolons are optional whitespace: the choice stands.
    std::string spaced;
    for (const char c : field) {
        spaced.push_back(c);
        if (c == ',' || c == ';') spaced.push_back(' ');
    }
    if (field.find('"') == std::string_view::npos && field.find('=') == std::string_view::npos)
        check(cspd::choose_coding(spaced, offered) == chosen);
    // A field that names the chosen coding alone with q=0 first refuses it.
    if (chosen != ContentCoding::identity) {
        const std::string refused = std::string(cspd::coding_name(chosen)) + ";q=0," + std::string(field);
        check(cspd::choose_coding(refused, offered) != chosen);
    }
    return 0;
}
