// llhttp wrapper: bytes in, complete requests out. No socket I/O, so it can be unit-tested
// and fuzzed alone; its one file I/O is a large body's spill to a temporary file (ParseLimits::
// memory_body_bytes; 0 keeps every body in memory). Strict mode: no lenient flags are ever set.
// All its state is its own: parsers never share anything, so a request handed to
// the sink stays valid until this parser is fed again, whatever other parsers do.
#pragma once

#include "http/request.hpp"
#include "http/spilled_body.hpp"

#include <llhttp.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

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
    std::size_t max_head_bytes = 8 * 1024;  ///< request line + headers
    std::size_t max_body_bytes = 1024 * 1024;
    /// Bodies over this (up to max_body_bytes) go to a temporary file in `*spill_folder` (null or
    /// empty: the system's temporary folder) as they arrive (SpilledBody); 0: every body stays in
    /// memory. A pointer: every connection's parser has limits, and an idle one should stay small.
    std::size_t memory_body_bytes = 0;
    const std::filesystem::path* spill_folder = nullptr;
};

class HttpParser {
public:
    enum class Status {
        ok,              ///< all bytes consumed, waiting for more
        paused,          ///< the sink asked to pause: consumed() bytes were used, resume() before feeding the rest
        stopped,         ///< the sink asked to stop
        upgrade,         ///< protocol upgrade / CONNECT: not supported, close
        bad_request,     ///< malformed: answer 400 and close
        head_too_large,  ///< answer 431 and close
        uri_too_long,    ///< the request-target alone is over the head limit: answer 414 and close
        bad_version,     ///< not HTTP/1.x: answer 505 and close
        body_too_large,  ///< answer 413 and close
        spill_failed,    ///< a large body could not be written to its temporary file: answer 503 and close
        unknown_coding,  ///< a transfer coding other than chunked: answer 501 and close (RFC 9112 §6.1)
        no_room,         ///< a large body is over its share of the upload folder: answer 507 and close
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
    /// Between requests: frees the buffers kept for reuse, so an idle connection is small.
    void release_memory();

    /// llhttp's reason for the last bad_request (or why a spill failed), for the log.
    const char* error_reason() const;

    /// True while a request has begun but not completed.
    bool mid_request() const { return in_message_; }
    /// True once the current request's head is complete (its body may still be arriving).
    bool in_body() const { return in_message_ && headers_done_; }
    /// How much of the current request's body has arrived (decoded).
    std::size_t body_bytes() const;

private:
    static int on_message_begin(llhttp_t*);
    static int on_method(llhttp_t*, const char*, std::size_t);
    static int on_url(llhttp_t*, const char*, std::size_t);
    static int on_version(llhttp_t*, const char*, std::size_t);
    static int on_header_field(llhttp_t*, const char*, std::size_t);
    static int on_header_value(llhttp_t*, const char*, std::size_t);
    static int on_header_value_complete(llhttp_t*);
    static int on_headers_complete(llhttp_t*);
    static int on_body(llhttp_t*, const char*, std::size_t);
    static int on_message_complete(llhttp_t*);

    static const llhttp_settings_t& settings();

    struct Span {
        std::size_t offset = 0, size = 0;
    };
    struct HeaderSpan {
        Span name, value;
    };
    enum class Field : std::uint8_t { none, url, name, value };

    /// Where `at` (in the current feed) is in the connection's byte stream, modulo 2^32.
    std::uint32_t stream_offset(const char* at) const {
        return fed_before_ + static_cast<std::uint32_t>(at - feed_base_);
    }
    /// True when only the bytes of each Transfer-Encoding field are "chunked", once.
    bool chunked_alone() const;
    /// Records `length` bytes at `at` as part of `field`; false past the head limit.
    bool add_to_field(Field field, Span& span, const char* at, std::size_t length);
    /// After llhttp refused a byte: hands the callbacks the field piece before it (see the .cpp).
    void deliver_open_span();
    /// End of a feed in mid-request: copy what the spans point at out of the caller's buffer.
    void keep_partial_head(const char* input_end);
    /// The request as views, for the sink.
    HttpRequest complete_request();
    /// Moves the body, `expected` bytes at least, to a temporary file from here on; false (status
    /// set) if it cannot.
    bool start_spill(std::size_t expected);
    /// The spill failed for `why`: the request fails with spill_failed.
    void spill_failed(std::string why);

    llhttp_t parser_;
    ParseLimits limits_;
    Status status_ = Status::ok;
    RequestSink* sink_ = nullptr;
    bool in_message_ = false;
    bool headers_done_ = false;  // later header callbacks are chunked trailers
    // A request that arrives whole in one feed is parsed in place: spans are offsets from
    // message_start_ in the caller's buffer. Only a request split across feeds is copied
    // into head_, and then continues there.
    bool borrowed_ = true;
    Field last_field_ = Field::none;
    const char* message_start_ = nullptr;
    const char* value_next_ = nullptr;  // where the next piece of a header value must start
    const char* feed_end_ = nullptr;    // end of the bytes of this feed
    std::size_t head_bytes_ = 0;
    std::size_t consumed_ = 0;
    Span target_;
    // RFC 9112 §3: one space between the request line's parts. llhttp lets runs of them through,
    // so where each part ends is kept as a stream offset (the line may come in several feeds).
    const char* feed_base_ = nullptr;
    std::uint32_t fed_before_ = 0;  // bytes parsed before feed_base_
    std::uint32_t method_end_ = 0, target_end_ = 0;
    std::string head_;
    std::string body_;
    std::shared_ptr<SpilledBody> spill_;  // the current request's body, once it is over memory_body_bytes
    std::unique_ptr<std::string> spill_error_;  // why the spill failed; made only then
    std::vector<HeaderSpan> spans_;    // the current request's headers, as offsets
    std::vector<HttpHeader> headers_;  // the same as views, for the request handed to the sink
};

}  // namespace cspd
