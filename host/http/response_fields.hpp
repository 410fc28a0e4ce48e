// A response's fields beyond those the host knows by name (Content-Type, Content-Length, Date,
// Server, X-Request-Id): what a handler set with csp_reply_header, or a route adds (ETag,
// Location, Retry-After...). Name and value pairs, kept as given; each protocol writes them its
// own way (HTTP/1 as lines, HTTP/2 lowered into HEADERS). Nothing reads them back from text.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace cspd {

struct ResponseField {
    std::string_view name, value;
};

/// Fields in one buffer: a reply that sets none allocates nothing, and one that sets a few, two
/// blocks. The views (`list()`) stay valid until the next change.
class ResponseFields {
public:
    ResponseFields() = default;
    ResponseFields(const ResponseFields& other) : text_(other.text_), places_(other.places_) { point_views(); }
    ResponseFields(ResponseFields&& other) noexcept
        : text_(std::move(other.text_)), places_(std::move(other.places_)), views_(std::move(other.views_)) {
        repoint();  // a short buffer moves by copy: the views must follow it
        other.clear();
    }
    ResponseFields& operator=(const ResponseFields& other);
    ResponseFields& operator=(ResponseFields&& other) noexcept;

    /// Adds a field (`name` and `value` already checked by whoever accepted them). Throws bad_alloc.
    void add(std::string_view name, std::string_view value);
    void clear() noexcept;

    std::span<const ResponseField> list() const { return views_; }
    bool empty() const { return places_.empty(); }
    std::size_t size() const { return places_.size(); }
    /// The value of the first field called `name` (any case), or a view with a null data().
    std::string_view find(std::string_view name) const;
    bool contains(std::string_view name) const { return find(name).data() != nullptr; }
    /// What they hold, for a cache's accounting.
    std::size_t bytes() const { return text_.size() + places_.size() * (sizeof(Place) + sizeof(ResponseField)); }

private:
    struct Place {
        std::uint32_t at, name_size, value_size;  // name then value, one after the other in text_
    };
    /// Makes a view for each place (allocates), or re-points the views there are (does not).
    void point_views();
    void repoint() noexcept;

    std::string text_;
    std::vector<Place> places_;
    std::vector<ResponseField> views_;
};

}  // namespace cspd
