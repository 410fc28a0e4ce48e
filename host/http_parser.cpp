#include "http_parser.hpp"

namespace cspd {
namespace {
HttpParser& self(llhttp_t* p) { return *static_cast<HttpParser*>(p->data); }
} // namespace

// One settings table for every parser: llhttp only reads it.
const llhttp_settings_t& HttpParser::settings() {
    static const llhttp_settings_t table = [] {
        llhttp_settings_t s;
        llhttp_settings_init(&s);
        s.on_message_begin = &HttpParser::on_message_begin;
        s.on_url = &HttpParser::on_url;
        s.on_header_field = &HttpParser::on_header_field;
        s.on_header_value = &HttpParser::on_header_value;
        s.on_header_value_complete = &HttpParser::on_header_value_complete;
        s.on_headers_complete = &HttpParser::on_headers_complete;
        s.on_body = &HttpParser::on_body;
        s.on_message_complete = &HttpParser::on_message_complete;
        return s;
    }();
    return table;
}

HttpParser::HttpParser(ParseLimits limits) : limits_(limits) {
    // llhttp_init takes a non-const pointer but never writes through it.
    llhttp_init(&parser_, HTTP_REQUEST, const_cast<llhttp_settings_t*>(&settings()));
    parser_.data = this;
}

HttpParser::Status HttpParser::feed(std::string_view data, RequestSink& sink) {
    if (status_ != Status::ok) return status_;  // a failed stream stays failed
    sink_ = &sink;
    llhttp_errno_t err = llhttp_execute(&parser_, data.data(), data.size());
    sink_ = nullptr;
    consumed_ = data.size();
    switch (err) {
    case HPE_OK:
        return Status::ok;
    case HPE_PAUSED_UPGRADE:
        return status_ = Status::upgrade;
    case HPE_PAUSED:
        if (status_ == Status::paused || status_ == Status::stopped)
            consumed_ = static_cast<std::size_t>(llhttp_get_error_pos(&parser_) - data.data());
        return status_;
    default:
        // A callback that failed has already set a precise status.
        return status_ != Status::ok ? status_ : (status_ = Status::bad_request);
    }
}

void HttpParser::resume() {
    if (status_ != Status::paused) return;
    status_ = Status::ok;
    llhttp_resume(&parser_);
}

const char* HttpParser::error_reason() const {
    const char* reason = llhttp_get_error_reason(&parser_);
    return reason ? reason : "malformed request";
}

bool HttpParser::append_head(const char* at, std::size_t length) {
    if (head_.size() + length > limits_.max_head_bytes) {
        status_ = Status::head_too_large;
        return false;
    }
    head_.append(at, length);
    return true;
}

int HttpParser::on_message_begin(llhttp_t* p) {
    HttpParser& s = self(p);
    s.in_message_ = true;
    s.headers_done_ = false;
    s.head_.clear();
    s.body_.clear();
    s.header_spans_.clear();
    s.target_ = {};
    s.last_field_ = Field::none;
    return 0;
}

int HttpParser::on_url(llhttp_t* p, const char* at, std::size_t length) {
    HttpParser& s = self(p);
    if (s.last_field_ != Field::url) {
        s.target_ = {s.head_.size(), 0};
        s.last_field_ = Field::url;
    }
    if (!s.append_head(at, length)) return -1;
    s.target_.size += length;
    return 0;
}

int HttpParser::on_header_field(llhttp_t* p, const char* at, std::size_t length) {
    HttpParser& s = self(p);
    // Trailers are not headers: a client must not be able to add or override headers after the body.
    if (s.headers_done_) return 0;
    if (s.last_field_ != Field::name) {
        if (s.header_spans_.size() >= 100) {  // too many headers
            s.status_ = Status::head_too_large;
            return -1;
        }
        s.header_spans_.push_back({{s.head_.size(), 0}, {s.head_.size(), 0}});
        s.last_field_ = Field::name;
    }
    if (!s.append_head(at, length)) return -1;
    s.header_spans_.back().name.size += length;
    return 0;
}

int HttpParser::on_header_value(llhttp_t* p, const char* at, std::size_t length) {
    HttpParser& s = self(p);
    if (s.headers_done_) return 0;
    if (s.last_field_ != Field::value) {
        s.header_spans_.back().value = {s.head_.size(), 0};
        s.last_field_ = Field::value;
    }
    if (!s.append_head(at, length)) return -1;
    s.header_spans_.back().value.size += length;
    return 0;
}

int HttpParser::on_header_value_complete(llhttp_t* p) {
    self(p).last_field_ = Field::none;  // an empty value gets no on_header_value call
    return 0;
}

int HttpParser::on_headers_complete(llhttp_t* p) {
    HttpParser& s = self(p);
    s.headers_done_ = true;
    if ((p->flags & F_CONTENT_LENGTH) && p->content_length > s.limits_.max_body_bytes) {
        s.status_ = Status::body_too_large;  // refuse before reading any of it
        return -1;
    }
    // RFC 9110 §10.1.1: an HTTP/1.1 client waiting to send a body gets a 100 first.
    const bool body_follows = (p->flags & F_CHUNKED) || ((p->flags & F_CONTENT_LENGTH) && p->content_length > 0);
    if (body_follows && p->http_major == 1 && p->http_minor >= 1) {
        for (const HeaderSpan& h : s.header_spans_) {
            std::string_view name = std::string_view(s.head_).substr(h.name.offset, h.name.size);
            std::string_view value = std::string_view(s.head_).substr(h.value.offset, h.value.size);
            if (iequals(name, "expect") && iequals(value, "100-continue")) {
                s.sink_->on_continue_expected();
                break;
            }
        }
    }
    return 0;
}

int HttpParser::on_body(llhttp_t* p, const char* at, std::size_t length) {
    HttpParser& s = self(p);
    if (s.body_.size() + length > s.limits_.max_body_bytes) {
        s.status_ = Status::body_too_large;
        return -1;
    }
    s.body_.append(at, length);
    return 0;
}

int HttpParser::on_message_complete(llhttp_t* p) {
    HttpParser& s = self(p);
    s.in_message_ = false;
    HttpRequest& r = s.request_;
    // Views are built only now: head_ may have reallocated while growing.
    r.method = llhttp_method_name(static_cast<llhttp_method_t>(p->method));
    r.target = std::string_view(s.head_).substr(s.target_.offset, s.target_.size);
    r.headers.clear();
    for (const HeaderSpan& h : s.header_spans_)
        r.headers.push_back({std::string_view(s.head_).substr(h.name.offset, h.name.size),
                             std::string_view(s.head_).substr(h.value.offset, h.value.size)});
    r.body = s.body_;
    r.http_major = p->http_major;
    r.http_minor = p->http_minor;
    // An Upgrade we do not speak: answer this request, then close rather than guess what follows.
    r.keep_alive = llhttp_should_keep_alive(p) != 0 && !p->upgrade;
    r.head = p->method == HTTP_HEAD;
    switch (s.sink_->on_request(r)) {
    case SinkAction::proceed:
        return 0;
    case SinkAction::pause:
        s.status_ = Status::paused;
        return HPE_PAUSED;
    case SinkAction::stop:
        s.status_ = Status::stopped;
        return HPE_PAUSED;
    }
    return 0;
}

} // namespace cspd
