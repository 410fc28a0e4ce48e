#include "serving/proxy_header_wait.hpp"

#include "http/proxy_header.hpp"

#include <sys/socket.h>

#include <array>
#include <cerrno>
#include <cstring>

namespace cspd {
namespace asio = boost::asio;

namespace {
asio::ip::tcp::endpoint endpoint_of(const IpAddress& address, unsigned short port) {
    if (address.is_v4()) {
        asio::ip::address_v4::bytes_type v4;
        std::memcpy(v4.data(), address.bytes.data() + 12, 4);
        return {asio::ip::address_v4(v4), port};
    }
    asio::ip::address_v6::bytes_type v6;
    std::memcpy(v6.data(), address.bytes.data(), 16);
    return {asio::ip::address_v6(v6), port};
}
}  // namespace

ProxyHeaderWait::ProxyHeaderWait(ReadWatch& reads, int fd, const asio::ip::tcp::endpoint& peer,
                                 std::chrono::seconds timeout, OnHeader on_header, OnRefused on_refused,
                                 std::size_t& waiting)
    : reads_(reads), fd_(fd), peer_(peer), client_(peer), retry_(reads.io()), deadline_(std::chrono::steady_clock::now() + timeout),
      on_header_(std::move(on_header)), on_refused_(std::move(on_refused)), waiting_(waiting) {
    ++waiting_;
}

ProxyHeaderWait::~ProxyHeaderWait() {
    if (!finished_) --waiting_;  // the loop ended first: the socket closes with fd_
}

void ProxyHeaderWait::begin() {
    switch (try_read()) {
    case Step::done: return;
    case Step::again_later: retry_after(std::chrono::milliseconds(10)); return;
    case Step::wait_readable:
        if (!reads_.watch(fd_.get(), shared_from_this())) {
            finish("the socket could not be watched");
            return;
        }
        watched_ = true;
        retry_after(std::chrono::duration_cast<std::chrono::milliseconds>(deadline_ - std::chrono::steady_clock::now()));
        return;
    }
}

void ProxyHeaderWait::on_readable() {
    if (finished_) return;
    const Step step = try_read();
    if (step == Step::wait_readable) {
        reads_.rewatch(fd_.get());
        return;
    }
    if (step == Step::again_later && watched_) {
        // Bytes are there but not the whole header: a level-triggered wait would fire at once.
        watched_ = false;
        reads_.forget(fd_.get());
        retry_after(std::chrono::milliseconds(10));
    }
}

ProxyHeaderWait::Step ProxyHeaderWait::try_read() {
    std::array<char, kProxyHeaderMax> peeked;
    const ssize_t n = ::recv(fd_.get(), peeked.data(), peeked.size(), MSG_PEEK);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return Step::wait_readable;
    if (n <= 0) {
        finish(n == 0 ? "the connection closed before its PROXY header" : std::strerror(errno));
        return Step::done;
    }
    const ProxyHeader header = parse_proxy_header({peeked.data(), std::size_t(n)});
    if (header.state == ProxyHeader::State::bad) {
        finish(header.why);
        return Step::done;
    }
    if (header.state == ProxyHeader::State::incomplete) return Step::again_later;
    // Exactly the header: what follows (a request, a TLS ClientHello) stays for the connection.
    if (::recv(fd_.get(), peeked.data(), header.length, 0) != ssize_t(header.length)) {
        finish("its PROXY header could not be read");
        return Step::done;
    }
    if (header.source) client_ = endpoint_of(*header.source, header.source_port);
    finish(nullptr);
    return Step::done;
}

void ProxyHeaderWait::retry_after(std::chrono::milliseconds delay) {
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline_) {
        finish("no whole PROXY header within --header-timeout");
        return;
    }
    retry_.expires_after(std::min<std::chrono::steady_clock::duration>(delay, deadline_ - now));
    retry_.async_wait([self = shared_from_this()](boost::system::error_code ec) {
        if (ec || self->finished_) return;
        // Runs in a completion handler: nothing may leave it, or the loop (and the worker) ends.
        try {
            if (self->watched_) {  // the deadline, while waiting for a first byte
                self->finish("no PROXY header within --header-timeout");
                return;
            }
            self->begin();
        } catch (const std::exception&) {
            self->finish("no memory to wait for its PROXY header");
        }
    });
}

void ProxyHeaderWait::finish(const char* refused_why) {
    if (finished_) return;
    const std::shared_ptr<ProxyHeaderWait> keep = shared_from_this();  // forget() may let the last hold go
    finished_ = true;
    --waiting_;
    retry_.cancel();
    if (watched_) {
        watched_ = false;
        reads_.forget(fd_.get());
    }
    if (refused_why) {
        on_refused_(peer_, refused_why);
        fd_.reset();
        return;
    }
    on_header_(fd_.release(), client_, peer_);
}

}  // namespace cspd
