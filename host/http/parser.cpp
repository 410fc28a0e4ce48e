#include "http/parser.hpp"

#include "common/ascii.hpp"

#include <algorithm>
#include <bit>
#include <cstring>

namespace cspd {
namespace {
HttpParser& self(llhttp_t* p) { return *static_cast<HttpParser*>(p->data); }

constexpr std::size_t kMaxHeaders = 100;

/// llhttp's own refusals of the bytes (not a callback's, not a pause).
bool is_syntax_error(llhttp_errno_t err) {
    return (err >= HPE_INTERNAL && err <= HPE_INVALID_TRANSFER_ENCODING) || err == HPE_CR_EXPECTED ||
           err == HPE_UNEXPECTED_SPACE;
}

}  // namespace

// One settings table for every parser: llhttp only reads it.
const llhttp_settings_t& HttpParser::settings() {
    static const llhttp_settings_t table = [] {
        llhttp_settings_t s;
        llhttp_settings_init(&s);
        s.on_message_begin = &HttpParser::on_message_begin;
        s.on_method = &HttpParser::on_method;
        s.on_url = &HttpParser::on_url;
        s.on_version = &HttpParser::on_version;
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
    // A header value goes on in this feed only if its last piece ran to the end of the last one.
    value_next_ = value_next_ == feed_end_ ? data.data() : nullptr;
    feed_base_ = data.data();
    feed_end_ = data.data() + data.size();
    llhttp_errno_t err = llhttp_execute(&parser_, data.data(), data.size());
    if (is_syntax_error(err) && status_ == Status::ok) deliver_open_span();
    sink_ = nullptr;
    consumed_ = data.size();
    if (err == HPE_PAUSED && (status_ == Status::paused || status_ == Status::stopped))
        consumed_ = static_cast<std::size_t>(llhttp_get_error_pos(&parser_) - data.data());
    fed_before_ += static_cast<std::uint32_t>(consumed_);
    if (in_message_ && err == HPE_OK) keep_partial_head(data.data() + data.size());
    switch (err) {
    case HPE_OK: return Status::ok;
    case HPE_PAUSED_UPGRADE: return status_ = Status::upgrade;
    case HPE_PAUSED: return status_;
    default:
        // A callback that failed has already set a precise status.
        return status_ != Status::ok ? status_ : (status_ = Status::bad_request);
    }
}

void HttpParser::deliver_open_span() {
    // llhttp drops the piece of a field it had open when it refuses a byte. Had the bytes come in
    // smaller reads, that piece would have reached the callbacks already, and a limit it crosses
    // would have been the verdict: deliver it, so the earliest byte decides however reads cut the
    // stream. (_span_pos0/_span_cb0 are llhttp's own record of that piece, in its public struct.)
    if (!parser_._span_pos0 || !parser_._span_cb0) return;
    const char* from = static_cast<const char*>(parser_._span_pos0);
    const char* to = llhttp_get_error_pos(&parser_);
    if (!to || to <= from) return;
    using SpanCallback = int (*)(llhttp_t*, const char*, const char*);
    std::bit_cast<SpanCallback>(parser_._span_cb0)(&parser_, from, to);
}

void HttpParser::keep_partial_head(const char* input_end) {
    if (borrowed_) {
        // Offsets were measured from message_start_: copying the raw bytes keeps them right,
        // and a field cut by the end of the input continues exactly at the end of head_.
        head_.assign(message_start_ ? message_start_ : input_end,
                     message_start_ ? static_cast<std::size_t>(input_end - message_start_) : 0);
        borrowed_ = false;
    }
}

void HttpParser::resume() {
    if (status_ != Status::paused) return;
    status_ = Status::ok;
    llhttp_resume(&parser_);
}

void HttpParser::release_memory() {
    if (in_message_) return;
    std::string().swap(head_);
    std::string().swap(body_);
    std::vector<HeaderSpan>().swap(spans_);
    std::vector<HttpHeader>().swap(headers_);
}

const char* HttpParser::error_reason() const {
    if ((status_ == Status::spill_failed || status_ == Status::no_room) && spill_error_) return spill_error_->c_str();
    const char* reason = llhttp_get_error_reason(&parser_);
    return reason ? reason : "malformed request";
}

bool HttpParser::add_to_field(Field field, Span& span, const char* at, std::size_t length) {
    head_bytes_ += length;
    if (head_bytes_ > limits_.max_head_bytes) {
        // RFC 9110 §15.5.15: a target that alone is too long gets its own status.
        status_ = field == Field::url ? Status::uri_too_long : Status::head_too_large;
        return false;
    }
    if (borrowed_) {
        // In place: llhttp reports each field once per feed, as one contiguous run.
        if (last_field_ != field) span = {static_cast<std::size_t>(at - message_start_), 0};
        span.size += length;
    } else {
        if (last_field_ != field) {
            span = {head_.size(), 0};
        } else if (span.offset + span.size != head_.size()) {
            // A continuation must extend the field where it stopped; after a head copied at a
            // feed boundary, bytes between them mean a folded line (or worse): refuse.
            status_ = Status::bad_request;
            return false;
        }
        head_.append(at, length);
        span.size += length;
    }
    last_field_ = field;
    return true;
}

int HttpParser::on_message_begin(llhttp_t* p) {
    HttpParser& s = self(p);
    s.in_message_ = true;
    s.headers_done_ = false;
    s.borrowed_ = true;
    s.message_start_ = nullptr;
    s.head_bytes_ = 0;
    s.head_.clear();
    s.body_.clear();
    s.spill_.reset();
    s.target_ = {};
    s.last_field_ = Field::none;
    s.spans_.clear();
    return 0;
}

int HttpParser::on_method(llhttp_t* p, const char* at, std::size_t length) {
    HttpParser& s = self(p);
    // The method opens the message: in-place offsets are measured from here.
    if (s.borrowed_ && !s.message_start_) s.message_start_ = at;
    s.head_bytes_ += length;
    s.method_end_ = s.stream_offset(at + length);
    return 0;
}

int HttpParser::on_url(llhttp_t* p, const char* at, std::size_t length) {
    HttpParser& s = self(p);
    if (s.borrowed_ && !s.message_start_) s.message_start_ = at;
    if (s.last_field_ != Field::url && s.stream_offset(at) != s.method_end_ + 1) return -1;  // "GET  /"
    s.target_end_ = s.stream_offset(at + length);
    return s.add_to_field(Field::url, s.target_, at, length) ? 0 : -1;
}

int HttpParser::on_version(llhttp_t* p, const char* at, std::size_t) {
    // Called with the digits after "HTTP/" (in pieces, if the line is split): the first must come
    // right after one space and the five letters.
    HttpParser& s = self(p);
    if (s.last_field_ == Field::url && s.stream_offset(at) != s.target_end_ + 6) return -1;  // "/x  HTTP/1.1"
    s.last_field_ = Field::none;
    return 0;
}

int HttpParser::on_header_field(llhttp_t* p, const char* at, std::size_t length) {
    HttpParser& s = self(p);
    // Trailers are not headers: a client must not be able to add or override headers after the body.
    if (s.headers_done_) return 0;
    // llhttp 8 lets a space inside a field name through; RFC 9110 §5.1 says token. The bytes
    // before the first other one still count toward the limits first: the earliest byte decides,
    // as it does when the name comes a byte at a time.
    std::size_t tokens = 0;
    while (tokens < length && is_token_char(at[tokens])) ++tokens;
    auto& spans = s.spans_;
    if (s.last_field_ != Field::name) {
        if (spans.size() >= kMaxHeaders) {
            s.status_ = Status::head_too_large;
            return -1;
        }
        spans.emplace_back();
    }
    if (!s.add_to_field(Field::name, spans.back().name, at, tokens)) return -1;
    return tokens == length ? 0 : -1;
}

int HttpParser::on_header_value(llhttp_t* p, const char* at, std::size_t length) {
    HttpParser& s = self(p);
    if (s.headers_done_) return 0;
    // It may report a folded part as a second piece of the same value. A value's pieces are
    // adjacent, in one feed or across feeds, so anything else is a fold, however the reads cut it.
    if (s.last_field_ == Field::value && at != s.value_next_) return -1;
    s.value_next_ = at + length;
    auto& spans = s.spans_;
    // A value starts right after a name; llhttp 8 reports ": v" as an empty name.
    if (s.last_field_ != Field::value && (s.last_field_ != Field::name || spans.back().name.size == 0)) return -1;
    // llhttp 8 passes obsolete line folding through as CR LF inside the value: refuse it
    // (RFC 9112 §5.2 allows rejecting with 400) rather than hand a handler a header with a newline.
    // The bytes before it count toward the limits first, as they would read a byte at a time.
    const void* cr = std::memchr(at, '\r', length);
    const void* lf = std::memchr(at, '\n', length);
    const std::size_t plain = std::min(cr ? std::size_t(static_cast<const char*>(cr) - at) : length,
                                       lf ? std::size_t(static_cast<const char*>(lf) - at) : length);
    if (!s.add_to_field(Field::value, spans.back().value, at, plain)) return -1;
    return plain == length ? 0 : -1;
}

int HttpParser::on_header_value_complete(llhttp_t* p) {
    HttpParser& s = self(p);
    if (!s.headers_done_ && (s.spans_.empty() || s.spans_.back().name.size == 0)) return -1;
    s.last_field_ = Field::none;  // an empty value gets no on_header_value call
    return 0;
}

int HttpParser::on_headers_complete(llhttp_t* p) {
    HttpParser& s = self(p);
    s.headers_done_ = true;
    if (p->http_major != 1) {  // llhttp also accepts 0.9 and 2.0 lines; this server speaks 1.x
        s.status_ = Status::bad_version;
        return -1;
    }
    // llhttp takes any codings before a final chunked: this server decodes none of them, and a
    // handler must not be handed a body still coded. (Without a final chunked the length is
    // unknown: llhttp answers that with 400 itself.)
    if ((p->flags & F_CHUNKED) && (p->flags & F_TRANSFER_ENCODING) && !s.chunked_alone()) {
        s.status_ = Status::unknown_coding;
        return -1;
    }
    if ((p->flags & F_CONTENT_LENGTH) && p->content_length > s.limits_.max_body_bytes) {
        s.status_ = Status::body_too_large;  // refuse before reading any of it
        return -1;
    }
    // A body known to be large goes to its file from the first byte, never through memory.
    if ((p->flags & F_CONTENT_LENGTH) && s.limits_.memory_body_bytes &&
        p->content_length > s.limits_.memory_body_bytes && !s.start_spill(p->content_length))
        return -1;
    // RFC 9110 §10.1.1: an HTTP/1.1 client waiting to send a body gets a 100 first.
    const bool body_follows = (p->flags & F_CHUNKED) || ((p->flags & F_CONTENT_LENGTH) && p->content_length > 0);
    if (body_follows && p->http_major == 1 && p->http_minor >= 1) {
        const char* base = s.borrowed_ ? s.message_start_ : s.head_.data();
        for (const auto& h : s.spans_) {
            std::string_view name(base + h.name.offset, h.name.size);
            std::string_view value(base + h.value.offset, h.value.size);
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
    const std::size_t so_far = s.spill_ ? s.spill_->size() : s.body_.size();
    if (so_far + length > s.limits_.max_body_bytes) {
        s.status_ = Status::body_too_large;
        return -1;
    }
    if (!s.spill_ && s.limits_.memory_body_bytes && so_far + length > s.limits_.memory_body_bytes &&
        !s.start_spill(so_far + length))
        return -1;
    if (s.spill_) {
        std::string why;
        if (!s.spill_->append({at, length}, why)) {
            const bool no_room = s.spill_->over_share();
            s.spill_failed(std::move(why));
            if (no_room) s.status_ = Status::no_room;
            return -1;
        }
        return 0;
    }
    s.body_.append(at, length);
    return 0;
}

bool HttpParser::chunked_alone() const {
    const char* base = borrowed_ ? message_start_ : head_.data();
    int codings = 0;
    for (const auto& h : spans_) {
        const std::string_view name(base + h.name.offset, h.name.size);
        if (!iequals(name, "transfer-encoding")) continue;
        const std::string_view value = trim_ows({base + h.value.offset, h.value.size});
        if (!iequals(value, "chunked") || ++codings > 1) return false;
    }
    return codings == 1;
}

std::size_t HttpParser::body_bytes() const { return spill_ ? spill_->size() : body_.size(); }

bool HttpParser::start_spill(std::size_t expected) {
    const bool own_folder = limits_.spill_folder && !limits_.spill_folder->empty();
    std::string why;
    bool no_room = false;
    spill_ = SpilledBody::create(own_folder ? *limits_.spill_folder : std::filesystem::temp_directory_path(),
                                 expected, why, no_room);
    if (!spill_ || !spill_->append(body_, why)) {
        spill_failed(std::move(why));
        if (no_room) status_ = Status::no_room;
        return false;
    }
    std::string().swap(body_);
    return true;
}

void HttpParser::spill_failed(std::string why) {
    spill_.reset();
    spill_error_ = std::make_unique<std::string>(std::move(why));
    status_ = Status::spill_failed;
}

HttpRequest HttpParser::complete_request() {
    HttpRequest request;
    const char* base = borrowed_ ? message_start_ : head_.data();
    request.method = llhttp_method_name(static_cast<llhttp_method_t>(parser_.method));
    request.target = std::string_view(base + target_.offset, target_.size);
    headers_.clear();
    for (const auto& h : spans_)
        headers_.push_back({std::string_view(base + h.name.offset, h.name.size),
                            std::string_view(base + h.value.offset, h.value.size)});
    request.headers = headers_;
    request.body = body_;
    if (spill_) {
        std::string why;
        if (!spill_->finish(why)) {
            spill_error_ = std::make_unique<std::string>(std::move(why));
            return request;  // the caller sees spill_ still set and fails
        }
        request.body = spill_->view();
        request.body_owner = std::move(spill_);
    }
    request.http_major = parser_.http_major;
    request.http_minor = parser_.http_minor;
    // An Upgrade we do not speak: answer this request, then close rather than guess what follows.
    request.keep_alive = llhttp_should_keep_alive(&parser_) != 0 && !parser_.upgrade;
    request.head = parser_.method == HTTP_HEAD;
    return request;
}

int HttpParser::on_message_complete(llhttp_t* p) {
    HttpParser& s = self(p);
    s.in_message_ = false;
    const HttpRequest request = s.complete_request();
    if (s.spill_) {  // its file could not be mapped
        s.status_ = Status::spill_failed;
        return -1;
    }
    switch (s.sink_->on_request(request)) {
    case SinkAction::proceed: return 0;
    case SinkAction::pause: s.status_ = Status::paused; return HPE_PAUSED;
    case SinkAction::stop: s.status_ = Status::stopped; return HPE_PAUSED;
    }
    return 0;
}

}  // namespace cspd
