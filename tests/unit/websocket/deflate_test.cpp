#include "websocket/deflate.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace cspd::ws {
namespace {

std::optional<std::string> answer_to(std::string_view offer) {
    std::vector<HttpHeader> headers = {{"Sec-WebSocket-Extensions", offer}};
    HttpRequest request;
    request.headers = headers;
    return accept_deflate(request);
}

constexpr std::string_view kAnswer = "permessage-deflate; server_no_context_takeover; client_no_context_takeover";

TEST(Deflate, AcceptsTheFirstOfferItCanHonourWithoutContextTakeover) {
    EXPECT_EQ(answer_to("permessage-deflate"), std::string(kAnswer));
    EXPECT_EQ(answer_to("permessage-deflate; client_max_window_bits"), std::string(kAnswer));
    EXPECT_EQ(answer_to("x-webkit-deflate-frame, permessage-deflate; server_max_window_bits=12"),
              std::string(kAnswer) + "; server_max_window_bits=12");
    EXPECT_EQ(answer_to("permessage-deflate; server_max_window_bits=8, permessage-deflate"), std::string(kAnswer));
    EXPECT_EQ(answer_to("permessage-deflate; server_max_window_bits=\"10\""), std::string(kAnswer) + "; server_max_window_bits=10");
}

TEST(Deflate, DeclinesOffersRfc7692CallsInvalid) {
    EXPECT_FALSE(answer_to("x-webkit-deflate-frame"));
    EXPECT_FALSE(answer_to("permessage-deflate; foo"));
    EXPECT_FALSE(answer_to("permessage-deflate; server_max_window_bits"));  // needs a value
    EXPECT_FALSE(answer_to("permessage-deflate; server_max_window_bits=16"));
    EXPECT_FALSE(answer_to("permessage-deflate; client_max_window_bits=7"));
    EXPECT_FALSE(answer_to("permessage-deflate; server_no_context_takeover; server_no_context_takeover"));
    EXPECT_FALSE(answer_to("permessage-deflate; server_no_context_takeover=1"));
}

TEST(Deflate, RoundTripsAMessageAndBoundsWhatItInflates) {
    std::string text;
    for (int i = 0; i < 2000; ++i) text += "message " + std::to_string(i % 7) + " ";
    std::string compressed;
    ASSERT_TRUE(deflate_message(text, compressed));
    EXPECT_LT(compressed.size(), text.size() / 4);
    std::string back;
    EXPECT_EQ(inflate_message(compressed, back, text.size()), Inflated::ok);
    EXPECT_EQ(back, text);
    // One byte short of the limit: refused before more is kept.
    std::string cut;
    EXPECT_EQ(inflate_message(compressed, cut, text.size() - 1), Inflated::too_big);
    EXPECT_LE(cut.size(), text.size() - 1);
    // A bomb: 64 MiB of zeros in about 64 KiB; stopped at the limit.
    std::string zeros(64 << 20, '\0'), bomb, out;
    ASSERT_TRUE(deflate_message(zeros, bomb));
    EXPECT_LT(bomb.size(), 100'000u);
    EXPECT_EQ(inflate_message(bomb, out, 1 << 20), Inflated::too_big);
    EXPECT_LE(out.size(), std::size_t(1) << 20);
    std::string garbage;
    EXPECT_EQ(inflate_message("\xff\xfe\xfd\xfc", garbage, 1 << 20), Inflated::corrupt);
}

}  // namespace
}  // namespace cspd::ws
