#include "http_client.hpp"

#include "loopback.hpp"
#include "sanitizers.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <stdexcept>
#include <system_error>

namespace cspd::test {

std::string HttpResponse::header(const std::string& lower_name) const {
    auto it = headers.find(lower_name);
    return it == headers.end() ? std::string() : it->second;
}

HttpClient::HttpClient(unsigned short port, std::chrono::milliseconds timeout, const char* source) {
    fd_ = connect_loopback(port, 0, source);
    if (fd_ < 0) throw std::system_error(errno, std::system_category(), "connect");
    timeval tv{static_cast<time_t>(timeout.count() / 1000), static_cast<suseconds_t>((timeout.count() % 1000) * 1000)};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

unsigned short HttpClient::local_port() const {
    sockaddr_in addr{};
    socklen_t length = sizeof addr;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &length);
    return ntohs(addr.sin_port);
}

HttpClient::~HttpClient() {
    if (fd_ >= 0) ::close(fd_);
}

void HttpClient::send(const std::string& bytes) {
    std::size_t done = 0;
    while (done < bytes.size()) {
        ssize_t n = ::send(fd_, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) throw std::system_error(errno, std::system_category(), "send");
        done += static_cast<std::size_t>(n);
    }
}

bool HttpClient::fill() {
    char chunk[16384];
    for (;;) {
        ssize_t n = ::recv(fd_, chunk, sizeof chunk, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        buffer_.append(chunk, static_cast<std::size_t>(n));
        return true;
    }
}

std::optional<HttpResponse> HttpClient::read_response(bool head_request) {
    std::size_t head_end;
    while ((head_end = buffer_.find("\r\n\r\n")) == std::string::npos)
        if (!fill()) return std::nullopt;
    HttpResponse response;
    std::string head = buffer_.substr(0, head_end);
    std::size_t line_end = head.find("\r\n");
    response.status_line = head.substr(0, line_end);
    if (response.status_line.size() < 12 || response.status_line.compare(0, 9, "HTTP/1.1 ") != 0) return std::nullopt;
    response.status = std::stoi(response.status_line.substr(9, 3));
    std::size_t at = line_end == std::string::npos ? head.size() : line_end + 2;
    while (at < head.size()) {
        std::size_t end = head.find("\r\n", at);
        if (end == std::string::npos) end = head.size();
        std::string line = head.substr(at, end - at);
        auto colon = line.find(':');
        if (colon != std::string::npos) {
            std::string name = line.substr(0, colon);
            std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
            std::string value = line.substr(colon + 1);
            value.erase(0, value.find_first_not_of(' '));
            response.headers.emplace(name, value);
        }
        at = end + 2;
    }
    if (!head_request && response.header("transfer-encoding") == "chunked") {
        if (!read_chunked_body(head_end + 4, response)) return std::nullopt;
        return response;
    }
    if (!head_request && !response.has_header("content-length") && response.header("connection") == "close" &&
        response.status >= 200 && response.status != 204 && response.status != 304) {
        while (fill()) {
        }  // delimited by the close
        response.body = buffer_.substr(head_end + 4);
        response.raw = buffer_;
        buffer_.clear();
        return response;
    }
    std::size_t length = 0;
    if (!head_request && response.has_header("content-length")) length = std::stoul(response.header("content-length"));
    const std::size_t total = head_end + 4 + length;
    while (buffer_.size() < total)
        if (!fill()) return std::nullopt;
    response.body = buffer_.substr(head_end + 4, length);
    response.raw = buffer_.substr(0, total);
    buffer_.erase(0, total);
    return response;
}

bool HttpClient::read_chunked_body(std::size_t at, HttpResponse& response) {
    for (;;) {
        std::size_t line_end;
        while ((line_end = buffer_.find("\r\n", at)) == std::string::npos)
            if (!fill()) return false;
        const std::size_t size = std::stoul(buffer_.substr(at, line_end - at), nullptr, 16);
        const std::size_t data = line_end + 2;
        while (buffer_.size() < data + size + 2)
            if (!fill()) return false;
        if (buffer_.compare(data + size, 2, "\r\n") != 0) return false;
        at = data + size + 2;
        if (size == 0) break;  // the last chunk (no trailers from cspd)
        response.body.append(buffer_, data, size);
        response.chunks.push_back(buffer_.substr(data, size));
    }
    response.raw = buffer_.substr(0, at);
    buffer_.erase(0, at);
    return true;
}

std::optional<std::string> HttpClient::read_chunked() {
    HttpResponse response;
    if (!read_chunked_body(0, response)) return std::nullopt;
    return std::move(response.body);
}

std::optional<std::string> HttpClient::read_head() {
    std::size_t head_end;
    while ((head_end = buffer_.find("\r\n\r\n")) == std::string::npos)
        if (!fill()) return std::nullopt;
    std::string head = buffer_.substr(0, head_end + 4);
    buffer_.erase(0, head_end + 4);
    return head;
}

std::string HttpClient::read_until(const std::string& text) {
    std::size_t found;
    while ((found = buffer_.find(text)) == std::string::npos)
        if (!fill()) return {};
    std::string got = buffer_.substr(0, found + text.size());
    buffer_.erase(0, found + text.size());
    return got;
}

std::optional<HttpResponse> HttpClient::get(const std::string& target) {
    send("GET " + target + " HTTP/1.1\r\nHost: localhost\r\n\r\n");
    return read_response();
}

bool HttpClient::closed_by_peer() {
    char byte;
    for (;;) {
        ssize_t n = ::recv(fd_, &byte, 1, 0);
        if (n == 0) return true;
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && errno == ECONNRESET) return true;
        if (n > 0) {
            buffer_.push_back(byte);
            continue;  // unread output first; keep looking for the close
        }
        return false;  // timeout
    }
}

std::optional<HttpResponse> fetch(unsigned short port, const std::string& target) {
    HttpClient client(port);
    client.send("GET " + target + " HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    return client.read_response();
}

::testing::AssertionResult answered_as_crash(HttpClient& client) {
    auto r = client.read_response();
    if (!r) {
#if defined(CSPD_TEST_ASAN)
        if (client.leftover().empty()) return ::testing::AssertionSuccess();
#endif
        return ::testing::AssertionFailure() << "no whole response; got '" << client.leftover() << "'";
    }
    if (r->status != 500 || r->header("connection") != "close" ||
        r->body != "500 Internal Server Error: the handler failed; the server carries on\n")
        return ::testing::AssertionFailure() << "not the crash answer:\n" << r->raw;
    if (!client.closed_by_peer()) return ::testing::AssertionFailure() << "the connection stayed open";
    return ::testing::AssertionSuccess();
}

std::string get_line(const std::string& target, const char* version) {
    return "GET " + target + " " + version + "\r\nHost: h\r\n\r\n";
}

double metric(unsigned short port, const std::string& sample) {
    const auto r = fetch(port, "/metrics");
    if (!r) return -1;
    const std::string line_start = "\n" + sample + " ";
    const auto at = r->body.find(line_start);
    return at == std::string::npos ? -1 : std::stod(r->body.substr(at + line_start.size()));
}

}  // namespace cspd::test
