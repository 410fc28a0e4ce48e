// HTTP/2's HEADERS for a Response (RFC 9113 §8.3.2): ":status" first, then Server, Date, the
// request id, Content-Type and Content-Length as the host knows them, then the fields the route
// or handler set, every name lowered (§8.2) and none that belongs to an HTTP/1 connection
// (§8.2.2: Connection, Keep-Alive, Transfer-Encoding, Upgrade...). Built straight from the typed
// response: nothing is parsed. No nghttp2 here, so the rules are tested alone.
#pragma once

#include "http/response.hpp"

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace cspd {

class Http2ResponseHead {
public:
    /// Makes the fields of `response` (`date`: Date's value, the loop's, which must outlive the
    /// fields); they stay valid until the next build. Reuses its buffers: an answer allocates
    /// nothing once they have grown.
    void build(const Response& response, std::string_view date);

    std::span<const ResponseField> fields() const { return views_; }
    /// What the fields weigh as HPACK's literals would carry them, before compression.
    std::size_t bytes() const { return bytes_; }

    /// A field of an HTTP/1 connection, never sent over HTTP/2. `name` in any case.
    static bool connection_specific(std::string_view name);

private:
    void add(std::string_view name, std::string_view value);
    /// `text` copied into text_ (lowered if `lower`), within the room build() reserved.
    std::string_view copy(std::string_view text, bool lower);

    std::string text_;
    std::vector<ResponseField> views_;
    std::size_t bytes_ = 0;
    char status_[3] = {};
    char length_[24] = {};
};

}  // namespace cspd
