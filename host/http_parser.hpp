// llhttp wrapper: bytes in, complete requests out, no I/O, so it can be
// unit-tested and fuzzed alone. Strict mode: no lenient flags are ever set.
#pragma once

#include "http_request.hpp"

#include <llhttp.h>

#include <cstddef>
#include <string>
#include <string_view>

namespace cspd {

/// What the sink wants after a request.
enum class SinkAction {
    proceed,  ///< parse on
    pause,    ///< stop here for now; feed the rest later, after resume()
    stop,     ///< parse nothing more (the connection closes after this request)
};

/// What HttpParser::feed reports to its caller for each complete request.
class RequestSink {
public:
    virtual SinkAction on_request(const HttpRequest& request) = 0;
    /// The client sent "Expect: 100-continue" and waits for a go-ahead before its body.
    virtual void on_continue_expected() {}
protected:
    ~RequestSink() = default;
};

struct ParseLimits {
    std::size_t max_head_bytes = 8 * 1024;      ///< request line + headers
    std::size_t max_body_bytes = 1024 * 1024;
};

class HttpParser {
public:
    enum class Status {
        ok,             ///< all bytes consumed, waiting for more
        paused,         ///< the sink asked to pause: consumed() bytes were used, resume() before feeding the rest
        stopped,        ///< the sink asked to stop
        upgrade,        ///< protocol upgrade / CONNECT: not supported, close
        bad_request,    ///< malformed: answer 400 and close
        head_too_large, ///< answer 431 and close
        body_too_large, ///< answer 413 and close
    };

    explicit HttpParser(ParseLimits limits = {});
    HttpParser(const HttpParser&) = delete;
    HttpParser& operator=(const HttpParser&) = delete;

    /// Parses `data`, calling sink.on_request for every complete request in order.
    Status feed(std::string_view data, RequestSink& sink);

    /// After `paused` or `stopped`: how many bytes of the last feed were parsed.
    std::size_t consumed() const { return consumed_; }
    /// Leaves the paused state.
    void resume();

    /// llhttp's reason for the last bad_request, for the log.
    const char* error_reason() const;

    /// True while a request has begun but not completed.
    bool mid_request() const { return in_message_; }
    /// True once the current request's head is complete (its body may still be arriving).
    bool in_body() const { return in_message_ && headers_done_; }

private:
    static int on_message_begin(llhttp_t*);
    static int on_url(llhttp_t*, const char*, std::size_t);
    static int on_header_field(llhttp_t*, const char*, std::size_t);
    static int on_header_value(llhttp_t*, const char*, std::size_t);
    static int on_header_value_complete(llhttp_t*);
    static int on_headers_complete(llhttp_t*);
    static int on_body(llhttp_t*, const char*, std::size_t);
    static int on_message_complete(llhttp_t*);

    static const llhttp_settings_t& settings();
    bool append_head(const char* at, std::size_t length);

    struct Span { std::size_t offset = 0, size = 0; };
    struct HeaderSpan { Span name, value; };

    llhttp_t parser_;
    ParseLimits limits_;
    Status status_ = Status::ok;
    RequestSink* sink_ = nullptr;
    bool in_message_ = false;
    bool headers_done_ = false;  // later header callbacks are chunked trailers
    std::size_t consumed_ = 0;

    // Storage reused across requests: no allocation once warm.
    std::string head_;   // method, target, header names and values, back to back
    std::string body_;
    Span target_;
    std::vector<HeaderSpan> header_spans_;
    enum class Field { none, url, name, value } last_field_ = Field::none;
    HttpRequest request_;
};

} // namespace cspd
