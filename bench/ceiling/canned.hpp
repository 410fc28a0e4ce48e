// What both ceiling servers share: the listening socket, the two canned responses (hello and xpng, with a Date that
// changes once a second) and the least request scanning that still answers each request of a
// pipelined batch with the right bytes. No HTTP parsing beyond that: the ceilings are the cost
// of the kernel path alone, the floor no real server can go under.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <string_view>

namespace ceiling {

/// Both take PORT HELLO_FILE XPNG_FILE; false (and a usage line) otherwise.
inline bool usage_ok(int argc, char** argv) {
    if (argc == 4) return true;
    std::fprintf(stderr, "usage: %s PORT HELLO_FILE XPNG_FILE\n", argv[0]);
    return false;
}

/// 127.0.0.1:port, set up as cspd and nginx set theirs: TCP_NODELAY (accepted sockets inherit
/// it) and TCP_DEFER_ACCEPT (accept once the request is there). Exits on failure.
inline int listen_on(int port, int type_flags = 0) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | type_flags, 0);
    const int on = 1, wait_s = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
    ::setsockopt(fd, IPPROTO_TCP, TCP_DEFER_ACCEPT, &wait_s, sizeof wait_s);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<uint16_t>(port));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 || ::listen(fd, 4096) != 0) {
        std::perror("bind/listen");
        std::exit(1);
    }
    return fd;
}

class CannedResponses {
public:
    CannedResponses(const char* hello_file, const char* xpng_file)
        : hello_body_(read(hello_file)), xpng_body_(read(xpng_file)) {
        refresh();
    }

    /// Rebuilds the responses if the second changed (CLOCK_REALTIME_COARSE costs no syscall).
    void refresh() {
        timespec now;
        ::clock_gettime(CLOCK_REALTIME_COARSE, &now);
        if (now.tv_sec == second_) return;
        second_ = now.tv_sec;
        char date[64];
        tm parts;
        ::gmtime_r(&now.tv_sec, &parts);
        std::strftime(date, sizeof date, "%a, %d %b %Y %H:%M:%S GMT", &parts);
        for (int close = 0; close < 2; ++close) {
            hello_[close] = build(date, "text/html; charset=utf-8", hello_body_, close);
            xpng_[close] = build(date, "image/png", xpng_body_, close);
        }
    }

    /// The reply to `path`; one that says Connection: close if the connection closes after it.
    std::string_view for_path(std::string_view path, bool close) const {
        return path == "/csp/xpng" ? std::string_view(xpng_[close]) : std::string_view(hello_[close]);
    }

private:
    static std::string read(const char* file) {
        std::ifstream in(file, std::ios::binary);
        if (!in) throw std::runtime_error(std::string("cannot read ") + file);
        return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    }
    static std::string build(const char* date, const char* type, const std::string& body, bool close) {
        return std::string("HTTP/1.1 200 OK\r\nServer: ceiling\r\nDate: ") + date + "\r\nContent-Type: " + type +
               "\r\nContent-Length: " + std::to_string(body.size()) + (close ? "\r\nConnection: close" : "") +
               "\r\n\r\n" + body;
    }

    std::string hello_body_, xpng_body_, hello_[2], xpng_[2];
    time_t second_ = 0;
};

/// Appends a response to `out` for every whole request at the front of `in` and returns how many
/// bytes of `in` they took. `close` is set if one of them asked for Connection: close.
inline std::size_t answer_requests(std::string_view in, const CannedResponses& canned, std::string& out,
                                   bool& close) {
    std::size_t used = 0;
    for (;;) {
        const std::string_view rest = in.substr(used);
        const std::size_t end = rest.find("\r\n\r\n");
        if (end == std::string_view::npos) return used;
        const std::string_view head = rest.substr(0, end);
        const std::size_t path_start = head.find(' ') + 1;
        const std::size_t path_end = head.find(' ', path_start);
        // HTTP/1.0 (ab) closes unless it asks to keep alive; 1.1 closes when it asks to.
        const bool http10 = head.substr(0, head.find('\r')).ends_with("HTTP/1.0");
        const bool closes = http10 ? head.find("onnection: keep-alive") == std::string_view::npos &&
                                         head.find("onnection: Keep-Alive") == std::string_view::npos
                                   : head.find("onnection: close") != std::string_view::npos;
        out.append(canned.for_path(head.substr(path_start, path_end - path_start), closes));
        used += end + 4;
        if (closes) {  // nothing after it is answered
            close = true;
            return in.size();
        }
    }
}

}  // namespace ceiling
