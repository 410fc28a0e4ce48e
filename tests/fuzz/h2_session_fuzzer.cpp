// libFuzzer target: HTTP/2 frames fed to the real session. An event loop (the same EventLoop a
// worker runs, with hello, echo, later, stream and ws_echo handlers and a www folder) listens on
// loopback; each input is sent on a new connection after the client preface and an empty
// SETTINGS frame, as a client's bytes, and the response is read until the server closes (the
// client half-closes after the input). The input decides everything after the preface: frame
// types, flags, stream ids, HPACK blocks, windows, resets. ASan, UBSan and the host's own
// checks do the finding; a server that stops answering is a finding too (a hang).
#include "handler/loader.hpp"
#include "routing/static_files.hpp"
#include "serving/event_loop.hpp"
#include "serving/listener.hpp"

#include <spdlog/spdlog.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>

namespace {

constexpr std::string_view kPreface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
constexpr unsigned char kEmptySettings[] = {0, 0, 0, 4, 0, 0, 0, 0, 0};

struct Harness {
    std::filesystem::path dir;
    std::unique_ptr<cspd::HandlerLoader> loader;
    std::unique_ptr<cspd::StaticFiles> www;
    std::unique_ptr<cspd::EventLoop> loop;
    std::thread runner;
    unsigned short port = 0;

    Harness() {
        spdlog::set_level(spdlog::level::off);
        char pattern[] = "/tmp/cspd-h2-fuzz-XXXXXX";
        dir = ::mkdtemp(pattern);
        std::filesystem::create_directories(dir / "www");
        std::ofstream(dir / "www" / "index.html") << "<p>index</p>";
        std::ofstream(dir / "www" / "big.bin") << std::string(200000, 'b');
        www = std::make_unique<cspd::StaticFiles>(dir / "www");
        cspd::LoopOptions options;
        options.connection.keepalive_timeout_s = 1;
        options.connection.header_timeout_s = 1;
        options.connection.send_timeout_s = 1;
        options.connection.http2.max_streams = 16;
        loop = std::make_unique<cspd::EventLoop>(0, options, *www);
        loader = std::make_unique<cspd::HandlerLoader>(dir);
        // ws_echo: extended CONNECTs (RFC 8441) become WebSocket conversations on their streams.
        for (const std::string name : {"hello", "echo", "later", "stream", "examples/ws_echo"}) {
            std::filesystem::path file = std::string(CSPD_FUZZ_HANDLERS_DIR) + "/" + name + ".so";
            if (!std::filesystem::exists(file)) file = std::string(CSPD_HANDLERS_DIR) + "/" + name + ".so";
            const std::string route = file.stem();
            auto loaded = loader->load(route, file);
            if (loaded.version) loop->set_handler(route, loaded.version, false);
        }
        const int listener = cspd::open_listener("127.0.0.1", 0);
        sockaddr_in bound{};
        socklen_t size = sizeof bound;
        ::getsockname(listener, reinterpret_cast<sockaddr*>(&bound), &size);
        port = ntohs(bound.sin_port);
        loop->adopt_listener(listener);
        runner = std::thread([this] { loop->run(); });
    }

    /// poll() for one descriptor, retried when a signal interrupts it.
    static int wait_for(pollfd& p, int timeout_ms) {
        int ready;
        do {
            ready = ::poll(&p, 1, timeout_ms);
        } while (ready < 0 && errno == EINTR);
        return ready;
    }

    /// Sends `bytes` after the preface, half-closes, and reads until the server closes.
    void run(const std::uint8_t* data, std::size_t size) {
        const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_in where{};
        where.sin_family = AF_INET;
        where.sin_port = htons(port);
        where.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        // libFuzzer's -timeout alarm interrupts blocking calls once a second: a connect it cut
        // short goes on by itself, and waits are retried (wait_for), so that no EINTR reads as a hang.
        if (::connect(fd, reinterpret_cast<sockaddr*>(&where), sizeof where) != 0) {
            pollfd p{fd, POLLOUT, 0};
            int error = 0;
            socklen_t error_size = sizeof error;
            if (errno != EINTR || wait_for(p, 3000) <= 0 ||
                ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &error_size) != 0 || error != 0)
                std::abort();
        }
        std::string bytes(kPreface);
        bytes.append(reinterpret_cast<const char*>(kEmptySettings), sizeof kEmptySettings);
        bytes.append(reinterpret_cast<const char*>(data), size);
        // What the server does not read (it stopped at an error) must not block the client.
        std::size_t sent = 0;
        char sink[65536];
        while (sent < bytes.size()) {
            pollfd p{fd, POLLOUT | POLLIN, 0};
            if (wait_for(p, 3000) <= 0) std::abort();  // the server neither reads nor answers: a hang
            if (p.revents & POLLIN) {
                const ssize_t n = ::recv(fd, sink, sizeof sink, 0);
                if (n <= 0) break;  // closed on us: the rest is not wanted
            }
            if (p.revents & POLLOUT) {
                const ssize_t n = ::send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
                if (n < 0) break;
                sent += static_cast<std::size_t>(n);
            }
        }
        ::shutdown(fd, SHUT_WR);
        for (;;) {
            pollfd p{fd, POLLIN, 0};
            // The session closes at the client's EOF; answers owed (a deferred reply, a stream)
            // are dropped then. Five seconds without a byte or the close is a hang.
            if (wait_for(p, 5000) <= 0) std::abort();
            const ssize_t n = ::recv(fd, sink, sizeof sink, 0);
            if (n <= 0) break;
        }
        ::close(fd);
    }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static Harness* harness = new Harness();  // never destroyed: its loop thread runs to the end
    harness->run(data, size);
    return 0;
}
