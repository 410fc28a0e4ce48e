// HTTP/1.1's wire format for a Response: the status line, Server and Date, the fields, the
// framing (Content-Length; chunked or delimited by the close for a stream; Connection as the
// version and the connection need), the body unless the request was HEAD. The only place that
// writes HTTP/1 answers; no I/O, so each rule is tested alone.
#pragma once

#include "http/date_cache.hpp"
#include "http/response.hpp"

#include <string>
#include <string_view>

namespace cspd {

/// Appends `response` to `out` as HTTP/1.1 says it to a request framed as `frame`: the head, then
/// the body's bytes (BodyKind::bytes; a file's follow from the file, a stream's as it writes).
/// `date`: the Date field's value.
void write_http1(std::string& out, const Response& response, const ResponseFrame& frame, std::string_view date);

/// A sink that writes HTTP/1.1 into a string: a session's output, or a test's.
class Http1Writer final : public ResponseSink {
public:
    Http1Writer(std::string& out, DateCache& date) : out_(out), date_(date) {}
    void send(const Response& response, const ResponseFrame& frame) override {
        write_http1(out_, response, frame, date_.now());
    }

private:
    std::string& out_;
    DateCache& date_;
};

}  // namespace cspd
