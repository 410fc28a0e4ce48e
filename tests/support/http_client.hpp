// A deliberately plain HTTP/1.1 client over a blocking socket, for black-box
// tests: it sends exactly the bytes it is given and parses what comes back.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace cspd::test {

struct HttpResponse {
    int status = 0;
    std::string status_line;
    std::multimap<std::string, std::string> headers;  ///< names lower-cased
    std::string body;
    std::string raw;  ///< every byte received for this response
    std::vector<std::string> chunks;  ///< a chunked body's chunks, as they came

    std::string header(const std::string& lower_name) const;
    bool has_header(const std::string& lower_name) const { return headers.count(lower_name) != 0; }
};

class HttpClient {
public:
    /// Connects to 127.0.0.1:port (from `source`, another loopback address, if given); throws on failure.
    explicit HttpClient(unsigned short port, std::chrono::milliseconds timeout = std::chrono::seconds(5),
                        const char* source = nullptr);
    ~HttpClient();
    HttpClient(const HttpClient&) = delete;
    HttpClient& operator=(const HttpClient&) = delete;

    void send(const std::string& bytes);
    /// Reads one response; `head_request` means no body follows whatever Content-Length says.
    /// nullopt if the connection closed or timed out before a whole response arrived.
    std::optional<HttpResponse> read_response(bool head_request = false);
    /// GET `target` with Host and keep-alive; the response, or nullopt.
    std::optional<HttpResponse> get(const std::string& target);
    /// Reads a response head alone (through the blank line); the body stays to be read.
    std::optional<std::string> read_head();
    /// Reads a chunked body whose head was read already (read_head); nullopt if it is cut short.
    std::optional<std::string> read_chunked();
    /// Reads through the first `text`; empty if it does not come.
    std::string read_until(const std::string& text);
    /// True if the server closed the connection (EOF) within the timeout.
    bool closed_by_peer();
    /// Bytes received but not yet part of a whole response (e.g. a response cut short).
    const std::string& leftover() const { return buffer_; }
    /// This end's port, to find the connection in /proc/net/tcp.
    unsigned short local_port() const;

private:
    bool fill();  // reads more into buffer_; false on EOF, error or timeout
    bool read_chunked_body(std::size_t at, HttpResponse& response);
    int fd_ = -1;
    std::string buffer_;
};

/// What a client whose handler brought its worker down must see: cspd's crash 500 with
/// Connection: close, then the close. Under the sanitizers, which may take the signal first,
/// the close alone is accepted too. Never anything else.
::testing::AssertionResult answered_as_crash(HttpClient& client);

/// One request on a new connection, closed afterwards.
std::optional<HttpResponse> fetch(unsigned short port, const std::string& target);

/// A GET of `target` with a Host field, as raw bytes to send.
std::string get_line(const std::string& target, const char* version = "HTTP/1.1");

/// One sample of /metrics (`name` or `name{labels}` exactly as printed), or -1 if it is absent.
double metric(unsigned short port, const std::string& sample);

}  // namespace cspd::test
