#include "serving/protocols/http2_response_head.hpp"

#include "common/ascii.hpp"

#include <charconv>

namespace cspd {

bool Http2ResponseHead::connection_specific(std::string_view name) {
    return iequals(name, "connection") || iequals(name, "keep-alive") || iequals(name, "transfer-encoding") ||
           iequals(name, "proxy-connection") || iequals(name, "upgrade");
}

std::string_view Http2ResponseHead::copy(std::string_view text, bool lower) {
    const std::size_t at = text_.size();
    text_.append(text);  // within what build() reserved: nothing moves
    if (lower)
        for (std::size_t i = at; i < text_.size(); ++i) text_[i] = ascii_lower(text_[i]);
    return {text_.data() + at, text.size()};
}

void Http2ResponseHead::add(std::string_view name, std::string_view value) {
    views_.push_back({name, value});
    bytes_ += name.size() + value.size() + 2;
}

void Http2ResponseHead::build(const Response& response, std::string_view date) {
    views_.clear();
    bytes_ = 0;
    // Copied: what the answer's owner may let go before nghttp2 takes the fields (the content
    // type, the request id, the fields set). Reserved first, so that no view into it moves. The
    // names and values the host writes itself are literals, or this object's, or the loop's date.
    std::size_t copied = response.content_type.size() + response.request_id.size();
    for (const ResponseField& field : response.fields) copied += field.name.size() + field.value.size();
    text_.clear();
    text_.reserve(copied);
    std::to_chars(status_, status_ + 3, code(response.status) % 1000);
    add(":status", std::string_view(status_, 3));
    add("server", "cspd");
    add("date", date);
    if (!response.request_id.empty()) add("x-request-id", copy(response.request_id, false));
    if (response.sends_body() && !response.content_type.empty())
        add("content-type", copy(response.content_type, false));
    if (const std::optional<std::uint64_t> length = response.content_length()) {
        const auto end = std::to_chars(length_, length_ + sizeof length_, *length).ptr;
        add("content-length", std::string_view(length_, static_cast<std::size_t>(end - length_)));
    }
    // §8.2.1: no whitespace at either end of a value (clients drop such a field).
    for (const ResponseField& field : response.fields)
        if (!connection_specific(field.name)) add(copy(field.name, true), copy(trim_ows(field.value), false));
}

}  // namespace cspd
