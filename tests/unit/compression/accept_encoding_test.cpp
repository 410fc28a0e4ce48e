// Accept-Encoding per RFC 9110 §12.5.3: q-values, *, identity, q=0, and the server's preference
// among equals (--compress-encodings).
#include "compression/accept_encoding.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace cspd {
namespace {

const std::vector<ContentCoding> kServerOrder{ContentCoding::zstd, ContentCoding::br, ContentCoding::gzip};

struct AcceptCase {
    const char* field;  // null: no Accept-Encoding at all
    ContentCoding chosen;
};

class AcceptEncoding : public ::testing::TestWithParam<AcceptCase> {};

TEST_P(AcceptEncoding, ChoosesAsRfc9110Says) {
    const AcceptCase& c = GetParam();
    const std::optional<std::string_view> field = c.field ? std::optional<std::string_view>(c.field) : std::nullopt;
    EXPECT_EQ(coding_name(choose_coding(field, kServerOrder)), coding_name(c.chosen)) << (c.field ? c.field : "(absent)");
}

using enum ContentCoding;
INSTANTIATE_TEST_SUITE_P(
    Cases, AcceptEncoding,
    ::testing::Values(
        AcceptCase{nullptr, identity},                              // absent: as it is
        AcceptCase{"", identity},                                   // empty: no coding wanted
        AcceptCase{"gzip", gzip}, AcceptCase{"br", br}, AcceptCase{"zstd", zstd},
        AcceptCase{"gzip, deflate, br", br},                        // equal q: the server's order
        AcceptCase{"gzip, deflate, br, zstd", zstd},                // Chromium's
        AcceptCase{"gzip, deflate", gzip},                          // curl --compressed without brotli
        AcceptCase{"GZIP", gzip}, AcceptCase{"x-gzip", gzip},             // any case; x-gzip is gzip
        AcceptCase{"br;q=0.5, gzip;q=0.8", gzip},                   // the client's q first
        AcceptCase{"zstd;q=0.1, br;q=0.1, gzip;q=0.1", zstd},       // equal low q: the server's order
        AcceptCase{"gzip;q=1.0, br;q=0.999", gzip},
        AcceptCase{"gzip;q=0", identity},                           // refused
        AcceptCase{"gzip;q=0.000", identity},
        AcceptCase{"*", zstd},                                      // anything: the server's first
        AcceptCase{"*;q=0.5, zstd;q=0", br},                        // * for the unnamed, zstd refused
        AcceptCase{"*;q=0", identity},                              // nothing acceptable: identity anyway
        AcceptCase{"identity", identity},                           // only identity named
        AcceptCase{"identity;q=0", identity},                       // refused too, but nothing else: identity
        AcceptCase{"gzip;q=0.5, identity", identity},               // identity ranked higher
        AcceptCase{"gzip, identity;q=0.5", gzip},
        AcceptCase{"gzip, identity", gzip},                         // a tie: compressed
        AcceptCase{"*;q=0.3, gzip;q=0.2", zstd},                    // * outranks the named gzip
        AcceptCase{"deflate, compress", identity},                  // nothing offered is named
        AcceptCase{"gzip;q=2", identity},                           // a bad q: the element is dropped
        AcceptCase{"gzip;q=0.5.5", identity}, AcceptCase{"gzip;q=", identity}, AcceptCase{"gzip;q=1.001", identity},
        AcceptCase{"gzip;q=abc, br", br},                           // only the bad element goes
        AcceptCase{"gzip ; q=0.5 , br ; q = 0.4", gzip},            // whitespace around ; and =
        AcceptCase{"gzip;Q=0.2, br;q=0.1", gzip},                   // Q in any case
        AcceptCase{"gzip;level=9", gzip},                           // other parameters are passed over
        AcceptCase{",,gzip,,", gzip},                               // empty elements are allowed
        AcceptCase{"gzip;q=0, gzip", identity},                     // the first mention counts
        AcceptCase{"zstd;q=0, br;q=0, gzip;q=0, identity;q=0", identity},
        AcceptCase{"\tbr\t", br}));

TEST(AcceptEncodingPreference, TheServersOrderDecidesAmongEquals) {
    const std::vector<ContentCoding> gzip_first{ContentCoding::gzip, ContentCoding::zstd};
    EXPECT_EQ(choose_coding("zstd, gzip, br", gzip_first), ContentCoding::gzip);
    EXPECT_EQ(choose_coding("br", gzip_first), ContentCoding::identity);  // br not offered
    EXPECT_EQ(choose_coding("gzip", {}), ContentCoding::identity);        // nothing offered (--no-compress)
}

}  // namespace
}  // namespace cspd
