#include "http/response_fields.hpp"

#include "common/ascii.hpp"

namespace cspd {

ResponseFields& ResponseFields::operator=(const ResponseFields& other) {
    if (this != &other) {
        text_ = other.text_;
        places_ = other.places_;
        point_views();
    }
    return *this;
}

ResponseFields& ResponseFields::operator=(ResponseFields&& other) noexcept {
    if (this != &other) {
        text_ = std::move(other.text_);
        places_ = std::move(other.places_);
        views_ = std::move(other.views_);
        repoint();
        other.clear();
    }
    return *this;
}

void ResponseFields::add(std::string_view name, std::string_view value) {
    const char* base = text_.data();
    const auto at = static_cast<std::uint32_t>(text_.size());
    places_.reserve(places_.size() + 1);
    views_.reserve(places_.size() + 1);  // nothing below throws once the text is in
    text_.append(name).append(value);
    places_.push_back({at, static_cast<std::uint32_t>(name.size()), static_cast<std::uint32_t>(value.size())});
    if (text_.data() != base) {
        point_views();  // the buffer moved: every view follows
        return;
    }
    views_.push_back({std::string_view(text_.data() + at, name.size()),
                      std::string_view(text_.data() + at + name.size(), value.size())});
}

void ResponseFields::clear() noexcept {
    text_.clear();
    places_.clear();
    views_.clear();
}

std::string_view ResponseFields::find(std::string_view name) const {
    for (const ResponseField& field : views_)
        if (iequals(field.name, name)) return field.value.data() ? field.value : std::string_view("", 0);
    return {};
}

void ResponseFields::point_views() {
    views_.resize(places_.size());
    repoint();
}

void ResponseFields::repoint() noexcept {
    for (std::size_t i = 0; i < places_.size(); ++i) {
        const Place& p = places_[i];
        views_[i] = {std::string_view(text_.data() + p.at, p.name_size),
                     std::string_view(text_.data() + p.at + p.name_size, p.value_size)};
    }
}

}  // namespace cspd
