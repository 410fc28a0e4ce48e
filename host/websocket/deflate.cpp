#include "websocket/deflate.hpp"

#include "common/ascii.hpp"

#include <zlib.h>

#include <charconv>
#include <memory>

namespace cspd::ws {
namespace {

constexpr char kTail[] = {'\x00', '\x00', '\xff', '\xff'};  // RFC 7692 §7.2.1: removed by the sender

/// One offer's parameters, as far as they are valid (§7.1: each at most once, values in range).
struct Offer {
    bool valid = true;
    bool client_max_window_bits = false;  // the client can take a smaller window for its messages
    int server_max_window_bits = 15;      // the largest window we may use for ours
};

Offer parse_offer(std::string_view params) {
    Offer offer;
    bool seen[4] = {};
    while (!params.empty()) {
        const std::size_t semi = params.find(';');
        std::string_view param = trim_ows(params.substr(0, semi));
        params = semi == std::string_view::npos ? std::string_view() : params.substr(semi + 1);
        if (param.empty()) continue;
        std::string_view value;
        if (const std::size_t eq = param.find('='); eq != std::string_view::npos) {
            value = trim_ows(param.substr(eq + 1));
            param = trim_ows(param.substr(0, eq));
            if (value.size() >= 2 && value.front() == '"' && value.back() == '"') value = value.substr(1, value.size() - 2);
        }
        int index = -1;
        if (iequals(param, "server_no_context_takeover") && value.empty()) index = 0;
        else if (iequals(param, "client_no_context_takeover") && value.empty()) index = 1;
        else if (iequals(param, "server_max_window_bits")) index = 2;
        else if (iequals(param, "client_max_window_bits")) index = 3;
        if (index < 0 || seen[index]) return {false};
        seen[index] = true;
        if (index >= 2 && !value.empty()) {
            int bits = 0;
            const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), bits);
            if (ec != std::errc() || end != value.data() + value.size() || bits < 8 || bits > 15) return {false};
            if (index == 2) offer.server_max_window_bits = bits;
        } else if (index == 2) {
            return {false};  // server_max_window_bits needs a value
        }
        if (index == 3) offer.client_max_window_bits = true;
    }
    return offer;
}

/// zlib's raw deflate with its window in 9..15 bits (it cannot make 8-bit windows).
struct Compressor {
    z_stream z{};
    bool ready = false;
    Compressor() { ready = deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) == Z_OK; }
    ~Compressor() {
        if (ready) deflateEnd(&z);
    }
};

struct Decompressor {
    z_stream z{};
    bool ready = false;
    Decompressor() { ready = inflateInit2(&z, -15) == Z_OK; }
    ~Decompressor() {
        if (ready) inflateEnd(&z);
    }
};

}  // namespace

std::optional<std::string> accept_deflate(const HttpRequest& request) {
    for (const HttpHeader& h : request.headers) {
        if (!iequals(h.name, "sec-websocket-extensions")) continue;
        std::string_view offers = h.value;
        while (!offers.empty()) {
            const std::size_t comma = offers.find(',');
            const std::string_view offer = trim_ows(offers.substr(0, comma));
            offers = comma == std::string_view::npos ? std::string_view() : offers.substr(comma + 1);
            const std::size_t semi = offer.find(';');
            if (!iequals(trim_ows(offer.substr(0, semi)), "permessage-deflate")) continue;
            const Offer parsed = parse_offer(semi == std::string_view::npos ? std::string_view() : offer.substr(semi + 1));
            // An 8-bit window for our messages is more than zlib can honour: that offer is declined.
            if (!parsed.valid || parsed.server_max_window_bits < 9) continue;
            std::string answer = "permessage-deflate; server_no_context_takeover; client_no_context_takeover";
            if (parsed.server_max_window_bits < 15)
                answer += "; server_max_window_bits=" + std::to_string(parsed.server_max_window_bits);
            return answer;
        }
    }
    return std::nullopt;
}

bool deflate_message(std::string_view message, std::string& out) {
    thread_local Compressor compressor;  // reset for each message: no context is taken over
    if (!compressor.ready) return false;
    z_stream& z = compressor.z;
    if (deflateReset(&z) != Z_OK) return false;
    const std::size_t began = out.size();
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(message.data()));
    z.avail_in = static_cast<uInt>(message.size());
    for (;;) {
        const std::size_t room = deflateBound(&z, z.avail_in) + 16;
        const std::size_t at = out.size();
        out.resize(at + room);
        z.next_out = reinterpret_cast<Bytef*>(out.data() + at);
        z.avail_out = static_cast<uInt>(room);
        const int rc = deflate(&z, Z_SYNC_FLUSH);
        out.resize(at + room - z.avail_out);
        if (rc != Z_OK && rc != Z_BUF_ERROR) {
            out.resize(began);
            return false;
        }
        if (z.avail_in == 0 && z.avail_out > 0) break;
    }
    // The sync flush ends with an empty stored block: 00 00 FF FF, which the receiver adds back.
    if (out.size() - began < 4 || out.compare(out.size() - 4, 4, kTail, 4) != 0) {
        out.resize(began);
        return false;
    }
    out.resize(out.size() - 4);
    return true;
}

Inflated inflate_message(std::string_view compressed, std::string& out, std::size_t limit) {
    thread_local Decompressor decompressor;
    if (!decompressor.ready) return Inflated::corrupt;
    z_stream& z = decompressor.z;
    if (inflateReset(&z) != Z_OK) return Inflated::corrupt;
    const std::string_view parts[2] = {compressed, std::string_view(kTail, 4)};
    char chunk[16 * 1024];
    for (const std::string_view part : parts) {
        z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(part.data()));
        z.avail_in = static_cast<uInt>(part.size());
        while (z.avail_in > 0) {
            z.next_out = reinterpret_cast<Bytef*>(chunk);
            z.avail_out = sizeof chunk;
            const int rc = inflate(&z, Z_SYNC_FLUSH);
            const std::size_t made = sizeof chunk - z.avail_out;
            if (made > limit - out.size()) return Inflated::too_big;  // before it is kept
            out.append(chunk, made);
            if (rc == Z_STREAM_END) return Inflated::ok;  // a final block: nothing after it counts
            if (rc == Z_BUF_ERROR && made == 0) break;
            if (rc != Z_OK && rc != Z_BUF_ERROR) return Inflated::corrupt;
        }
    }
    return Inflated::ok;
}

}  // namespace cspd::ws
