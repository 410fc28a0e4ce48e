// Each coding round-trips through its own library's decoder, whole and in flushed pieces, and a
// flushed piece decodes before the body ends (what a server-sent event needs).
#include "compression/body_encoder.hpp"
#include "compression/compression_policy.hpp"

#include <brotli/decode.h>
#include <gtest/gtest.h>
#include <zlib.h>
#include <zstd.h>

#include <cstdio>
#include <random>
#include <string>

namespace cspd {
namespace {

/// Decodes what has come so far; `complete` says whether the body's end was among it.
std::string decode_body(ContentCoding coding, const std::string& in, bool& complete) {
    std::string out;
    complete = false;
    if (coding == ContentCoding::gzip) {
        z_stream z{};
        EXPECT_EQ(inflateInit2(&z, 15 + 16), Z_OK);
        z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
        z.avail_in = static_cast<uInt>(in.size());
        char chunk[4096];
        int status = Z_OK;
        do {
            z.next_out = reinterpret_cast<Bytef*>(chunk);
            z.avail_out = sizeof chunk;
            status = inflate(&z, Z_SYNC_FLUSH);
            out.append(chunk, sizeof chunk - z.avail_out);
        } while (status == Z_OK && (z.avail_in > 0 || z.avail_out == 0));
        complete = status == Z_STREAM_END;
        inflateEnd(&z);
    } else if (coding == ContentCoding::br) {
        BrotliDecoderState* state = BrotliDecoderCreateInstance(nullptr, nullptr, nullptr);
        std::size_t available_in = in.size();
        const std::uint8_t* next_in = reinterpret_cast<const std::uint8_t*>(in.data());
        BrotliDecoderResult result;
        do {
            std::uint8_t chunk[4096];
            std::size_t available_out = sizeof chunk;
            std::uint8_t* next_out = chunk;
            result = BrotliDecoderDecompressStream(state, &available_in, &next_in, &available_out, &next_out, nullptr);
            out.append(reinterpret_cast<char*>(chunk), sizeof chunk - available_out);
        } while (result == BROTLI_DECODER_RESULT_NEEDS_MORE_OUTPUT || BrotliDecoderHasMoreOutput(state) ||
                 (result == BROTLI_DECODER_RESULT_NEEDS_MORE_INPUT && available_in > 0));
        EXPECT_NE(result, BROTLI_DECODER_RESULT_ERROR);
        complete = result == BROTLI_DECODER_RESULT_SUCCESS;
        BrotliDecoderDestroyInstance(state);
    } else {
        ZSTD_DStream* stream = ZSTD_createDStream();
        ZSTD_inBuffer input{in.data(), in.size(), 0};
        for (;;) {  // until the input is taken and nothing more comes out
            char chunk[4096];
            ZSTD_outBuffer output{chunk, sizeof chunk, 0};
            const std::size_t left = ZSTD_decompressStream(stream, &output, &input);
            EXPECT_FALSE(ZSTD_isError(left)) << ZSTD_getErrorName(left);
            if (ZSTD_isError(left)) break;
            out.append(chunk, output.pos);
            if (left == 0) complete = true;  // a frame ended
            if (input.pos == input.size && output.pos < output.size) break;
        }
        ZSTD_freeDStream(stream);
    }
    return out;
}

std::string json_rows(std::size_t bytes) {
    std::mt19937 random(7);
    std::string text = "[";
    for (int i = 0; text.size() < bytes; ++i)
        text += "{\"id\":" + std::to_string(i) + ",\"name\":\"user" + std::to_string(random() % 1000) +
                "\",\"active\":" + (random() % 2 ? "true" : "false") + "},";
    text.back() = ']';
    return text;
}

class BodyEncoderTest : public ::testing::TestWithParam<ContentCoding> {};

TEST_P(BodyEncoderTest, AWholeBodyRoundTripsSmaller) {
    const std::string body = json_rows(16 * 1024);
    std::string encoded;
    ASSERT_TRUE(encode_whole(GetParam(), body, encoded));
    EXPECT_LT(encoded.size(), body.size() / 3);
    bool complete = false;
    EXPECT_EQ(decode_body(GetParam(), encoded, complete), body);
    EXPECT_TRUE(complete);
    // The thread's context is reused: a second, different body is not polluted by the first.
    const std::string other = json_rows(600);
    ASSERT_TRUE(encode_whole(GetParam(), other, encoded));
    EXPECT_EQ(decode_body(GetParam(), encoded, complete), other);
    EXPECT_TRUE(complete);
}

TEST_P(BodyEncoderTest, EmptyAndIncompressibleBodiesRoundTrip) {
    std::string noise(70000, '\0');
    std::mt19937 random(3);
    for (char& c : noise) c = static_cast<char>(random());
    for (const std::string& body : {std::string(), noise}) {
        std::string encoded;
        ASSERT_TRUE(encode_whole(GetParam(), body, encoded));
        bool complete = false;
        EXPECT_EQ(decode_body(GetParam(), encoded, complete), body);
        EXPECT_TRUE(complete);
    }
}

TEST_P(BodyEncoderTest, EachFlushedPieceDecodesBeforeTheStreamEnds) {
    const auto encoder = BodyEncoder::make(GetParam());
    ASSERT_TRUE(encoder);
    std::string wire, sent;
    for (int i = 0; i < 50; ++i) {
        const std::string event = "data: {\"tick\":" + std::to_string(i) + ",\"pad\":\"" + std::string(i * 40, 'x') + "\"}\n\n";
        sent += event;
        ASSERT_TRUE(encoder->encode(event, BodyEncoder::Flush::sync, wire));
        bool complete = true;
        EXPECT_EQ(decode_body(GetParam(), wire, complete), sent) << "after event " << i;
        EXPECT_FALSE(complete);
    }
    ASSERT_TRUE(encoder->encode("", BodyEncoder::Flush::finish, wire));
    bool complete = false;
    EXPECT_EQ(decode_body(GetParam(), wire, complete), sent);
    EXPECT_TRUE(complete);
}

TEST_P(BodyEncoderTest, UnflushedPiecesAndALongStreamRoundTrip) {
    const auto encoder = BodyEncoder::make(GetParam());
    ASSERT_TRUE(encoder);
    const std::string piece = json_rows(10000);
    std::string wire, sent;
    for (int i = 0; i < 100; ++i) {  // 1 MB through a small window
        sent += piece;
        ASSERT_TRUE(encoder->encode(piece, BodyEncoder::Flush::none, wire));
    }
    // Whatever the stream's length, its coder holds a bounded amount (documented in README.md).
    const std::size_t held = encoder->memory();
    RecordProperty("memory_bytes", std::to_string(held));
    std::printf("%s stream coder: %zu bytes\n", std::string(coding_name(GetParam())).c_str(), held);
    EXPECT_GT(held, 0u);
    EXPECT_LE(held, kStreamCoderMemoryBound);
    ASSERT_TRUE(encoder->encode("", BodyEncoder::Flush::finish, wire));
    bool complete = false;
    EXPECT_EQ(decode_body(GetParam(), wire, complete), sent);
    EXPECT_TRUE(complete);
    EXPECT_LT(wire.size(), sent.size() / 3);
}

INSTANTIATE_TEST_SUITE_P(Codings, BodyEncoderTest,
                         ::testing::Values(ContentCoding::gzip, ContentCoding::br, ContentCoding::zstd),
                         [](const auto& param_info) { return std::string(coding_name(param_info.param)); });

TEST(BodyEncoderMake, IdentityHasNoEncoder) { EXPECT_FALSE(BodyEncoder::make(ContentCoding::identity)); }

TEST(CompressionPolicy, TypesMatchByPatternIgnoringParametersAndCase) {
    const CompressionPolicy policy;
    for (const char* type : {"text/html", "text/plain; charset=utf-8", "TEXT/CSS", "application/json",
                             "application/problem+json", "application/ld+JSON", "application/javascript",
                             "application/xml", "application/atom+xml", "image/svg+xml", "application/wasm",
                             " text/event-stream "})
        EXPECT_TRUE(policy.compressible_type(type)) << type;
    for (const char* type : {"", "image/png", "application/octet-stream", "application/jsonx", "application/+json",
                             "textual/html", "text", "text/", "/json", "video/mp4", "application/zip"})
        EXPECT_FALSE(policy.compressible_type(type)) << type;
    EXPECT_TRUE(valid_type_pattern("text/*"));
    EXPECT_TRUE(valid_type_pattern("application/*+json"));
    EXPECT_FALSE(valid_type_pattern("text"));
    EXPECT_FALSE(valid_type_pattern("text/html; charset=utf-8"));
    EXPECT_FALSE(valid_type_pattern("a/b/c"));
}

}  // namespace
}  // namespace cspd
