// The io_uring ceiling: one thread and one ring set up the way io_uring is said to be fastest
// for a server (SINGLE_ISSUER | DEFER_TASKRUN, a registered ring fd), with
//  - one multishot accept into direct descriptors (no fd table, no per-connection syscall);
//  - one multishot recv per connection, reading into a provided-buffer ring;
//  - send from a per-connection buffer, and in close mode send -> shutdown -> close hard-linked;
//  - one io_uring_enter per loop pass: submit what the last pass queued and wait for completions.
// Canned responses, as the epoll ceiling. Usage: uring_ceiling PORT HELLO_FILE XPNG_FILE
#include "canned.hpp"

#include <liburing.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

constexpr unsigned kFiles = 16384;       // direct descriptors
constexpr unsigned kBuffers = 4096;      // provided buffers, group 0
constexpr unsigned kBufferSize = 4096;
constexpr unsigned kBufferGroup = 0;

enum Kind : std::uint64_t { kAccept = 1, kRecv, kSend, kClose };

// user_data: kind, the connection's generation (a slot is reused after a close, while a late
// completion of its previous connection may still arrive), the slot.
std::uint64_t tag(Kind kind, std::uint32_t generation, std::uint32_t slot) {
    return (std::uint64_t(kind) << 56) | (std::uint64_t(generation & 0xffffff) << 32) | slot;
}
Kind kind_of(std::uint64_t data) { return static_cast<Kind>(data >> 56); }
std::uint32_t generation_of(std::uint64_t data) { return (data >> 32) & 0xffffff; }
std::uint32_t slot_of(std::uint64_t data) { return static_cast<std::uint32_t>(data); }

struct Connection {
    std::string in, sending, queued;
    std::uint32_t generation = 0;
    bool open = false, sending_busy = false, close_after = false, closing = false;
};

class Ring {
public:
    explicit Ring(int listener) : listener_(listener), connections_(kFiles) {
        io_uring_params params{};
        params.flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_CQSIZE;
        params.cq_entries = 4 * kFiles;
        if (int rc = io_uring_queue_init_params(4096, &ring_, &params); rc < 0) {
            std::fprintf(stderr, "io_uring_queue_init_params: %s\n", std::strerror(-rc));
            std::exit(1);
        }
        if (io_uring_register_ring_fd(&ring_) < 0) std::fprintf(stderr, "note: no registered ring fd\n");
        if (int rc = io_uring_register_files_sparse(&ring_, kFiles); rc < 0) {
            std::fprintf(stderr, "io_uring_register_files_sparse: %s\n", std::strerror(-rc));
            std::exit(1);
        }
        const std::size_t ring_bytes = kBuffers * sizeof(io_uring_buf);
        buffer_ring_ = static_cast<io_uring_buf_ring*>(
            ::mmap(nullptr, ring_bytes, PROT_READ | PROT_WRITE, MAP_ANONYMOUS | MAP_PRIVATE, -1, 0));
        buffers_ = static_cast<char*>(::mmap(nullptr, std::size_t(kBuffers) * kBufferSize, PROT_READ | PROT_WRITE,
                                             MAP_ANONYMOUS | MAP_PRIVATE, -1, 0));
        io_uring_buf_reg registration{};
        registration.ring_addr = reinterpret_cast<std::uint64_t>(buffer_ring_);
        registration.ring_entries = kBuffers;
        registration.bgid = kBufferGroup;
        if (int rc = io_uring_register_buf_ring(&ring_, &registration, 0); rc < 0) {
            std::fprintf(stderr, "io_uring_register_buf_ring: %s\n", std::strerror(-rc));
            std::exit(1);
        }
        io_uring_buf_ring_init(buffer_ring_);
        for (unsigned i = 0; i < kBuffers; ++i)
            io_uring_buf_ring_add(buffer_ring_, buffers_ + std::size_t(i) * kBufferSize, kBufferSize,
                                  static_cast<unsigned short>(i), io_uring_buf_ring_mask(kBuffers), static_cast<int>(i));
        io_uring_buf_ring_advance(buffer_ring_, kBuffers);
    }

    [[noreturn]] void run(ceiling::CannedResponses& canned) {
        canned_ = &canned;
        arm_accept();
        for (;;) {
            io_uring_submit_and_wait(&ring_, 1);
            canned.refresh();
            unsigned head, seen = 0;
            io_uring_cqe* cqe;
            io_uring_for_each_cqe(&ring_, head, cqe) {
                complete(cqe->user_data, cqe->res, cqe->flags);
                ++seen;
            }
            io_uring_cq_advance(&ring_, seen);
        }
    }

private:
    io_uring_sqe* next_sqe() {
        io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
        while (!sqe) {  // full: hand the queue to the kernel and take a fresh entry
            io_uring_submit(&ring_);
            sqe = io_uring_get_sqe(&ring_);
        }
        return sqe;
    }

    void arm_accept() {
        io_uring_sqe* sqe = next_sqe();
        io_uring_prep_multishot_accept_direct(sqe, listener_, nullptr, nullptr, 0);
        io_uring_sqe_set_data64(sqe, tag(kAccept, 0, 0));
    }

    void arm_recv(std::uint32_t slot) {
        io_uring_sqe* sqe = next_sqe();
        io_uring_prep_recv_multishot(sqe, static_cast<int>(slot), nullptr, 0, 0);
        sqe->flags |= IOSQE_FIXED_FILE | IOSQE_BUFFER_SELECT;
        sqe->buf_group = kBufferGroup;
        io_uring_sqe_set_data64(sqe, tag(kRecv, connections_[slot].generation, slot));
    }

    void give_back(unsigned buffer) {
        io_uring_buf_ring_add(buffer_ring_, buffers_ + std::size_t(buffer) * kBufferSize, kBufferSize,
                              static_cast<unsigned short>(buffer), io_uring_buf_ring_mask(kBuffers), 0);
        io_uring_buf_ring_advance(buffer_ring_, 1);
    }

    void close(std::uint32_t slot) {
        Connection& c = connections_[slot];
        if (c.closing) return;
        c.closing = true;
        io_uring_sqe* sqe = next_sqe();
        io_uring_prep_close_direct(sqe, slot);
        io_uring_sqe_set_data64(sqe, tag(kClose, c.generation, slot));
    }

    void send_queued(std::uint32_t slot) {
        Connection& c = connections_[slot];
        if (c.sending_busy || c.queued.empty() || c.closing) return;
        std::swap(c.sending, c.queued);
        c.queued.clear();
        c.sending_busy = true;
        io_uring_sqe* sqe = next_sqe();
        io_uring_prep_send(sqe, static_cast<int>(slot), c.sending.data(), c.sending.size(), MSG_NOSIGNAL);
        sqe->flags |= IOSQE_FIXED_FILE;
        io_uring_sqe_set_data64(sqe, tag(kSend, c.generation, slot));
        if (!c.close_after) return;
        // Close mode: the FIN follows the reply in the same submission; hard links go on even if
        // the send fails, so the slot is always given back.
        c.closing = true;
        sqe->flags |= IOSQE_IO_HARDLINK;
        io_uring_sqe* shut = next_sqe();
        io_uring_prep_shutdown(shut, static_cast<int>(slot), SHUT_WR);
        shut->flags |= IOSQE_FIXED_FILE | IOSQE_IO_HARDLINK;
        io_uring_sqe_set_data64(shut, tag(kClose, c.generation, kFiles));  // only the close's counts
        io_uring_sqe* closing = next_sqe();
        io_uring_prep_close_direct(closing, slot);
        io_uring_sqe_set_data64(closing, tag(kClose, c.generation, slot));
    }

    void complete(std::uint64_t data, int res, unsigned flags) {
        const Kind kind = kind_of(data);
        const std::uint32_t slot = slot_of(data);
        if (kind == kAccept) {
            if (res >= 0 && static_cast<unsigned>(res) < kFiles) {
                Connection& c = connections_[res];
                const std::uint32_t generation = c.generation + 1;
                c = Connection{};
                c.generation = generation;
                c.open = true;
                arm_recv(static_cast<std::uint32_t>(res));
            }
            if (!(flags & IORING_CQE_F_MORE)) arm_accept();
            return;
        }
        if (slot >= kFiles) return;  // the shutdown of a close-mode chain
        Connection& c = connections_[slot];
        const bool current = c.open && c.generation == (generation_of(data) & 0xffffff);
        if (kind == kRecv) {
            if (flags & IORING_CQE_F_BUFFER) {
                const unsigned buffer = flags >> IORING_CQE_BUFFER_SHIFT;
                if (current && res > 0) on_bytes(slot, std::string_view(buffers_ + std::size_t(buffer) * kBufferSize,
                                                                        static_cast<std::size_t>(res)));
                give_back(buffer);
            }
            if (!current || c.closing) return;
            if (res == 0 || (res < 0 && res != -ENOBUFS)) {
                if (c.sending_busy) c.close_after = true;  // after the reply in flight
                else close(slot);
                return;
            }
            if (!(flags & IORING_CQE_F_MORE)) arm_recv(slot);
            return;
        }
        if (!current) return;
        if (kind == kSend) {
            c.sending_busy = false;
            if (c.closing) return;  // its close is linked
            if (res < 0) return close(slot);
            if (static_cast<std::size_t>(res) < c.sending.size()) {  // short: the rest goes first
                c.queued.insert(0, c.sending, static_cast<std::size_t>(res));
            }
            c.sending.clear();
            if (c.close_after && c.queued.empty()) return close(slot);
            send_queued(slot);
            return;
        }
        if (kind == kClose) c.open = false;
    }

    void on_bytes(std::uint32_t slot, std::string_view bytes) {
        Connection& c = connections_[slot];
        if (!c.in.empty()) {
            c.in.append(bytes);
            bytes = c.in;
        }
        const std::size_t used = ceiling::answer_requests(bytes, *canned_, c.queued, c.close_after);
        std::string rest(bytes.substr(used));
        c.in = std::move(rest);
        send_queued(slot);
    }

    io_uring ring_{};
    int listener_;
    std::vector<Connection> connections_;
    io_uring_buf_ring* buffer_ring_ = nullptr;
    char* buffers_ = nullptr;
    ceiling::CannedResponses* canned_ = nullptr;
};

}  // namespace

int main(int argc, char** argv) {
    if (!ceiling::usage_ok(argc, argv)) return 2;
    ceiling::CannedResponses canned(argv[2], argv[3]);
    Ring ring(ceiling::listen_on(std::atoi(argv[1])));
    ring.run(canned);
}
