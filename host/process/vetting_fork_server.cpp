#include "process/vetting_fork_server.hpp"

#include "common/fd_passing.hpp"
#include "common/unique_fd.hpp"
#include "process/handler_vetting.hpp"
#include "process/sandbox.hpp"
#include "process/spawn_self.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

namespace cspd {
namespace asio = boost::asio;

namespace {
constexpr int kSocketFd = 3;      // the fork server's end, in the fork server
constexpr int kReplyWaitMs = 5000;  // for the pid of a fork (the first waits for the server to start)

/// The NUL-separated words of a request.
std::vector<std::string> words(const char* data, std::size_t size) {
    std::vector<std::string> out;
    std::size_t start = 0;
    for (std::size_t i = 0; i < size; ++i)
        if (data[i] == '\0') out.emplace_back(data + start, i - start), start = i + 1;
    return out;
}
}  // namespace

struct VettingForkServer::State {
    explicit State(asio::io_context& io_context) : io(io_context), socket(io_context) {}

    asio::io_context& io;
    asio::posix::stream_descriptor socket;  // our end; non-blocking
    pid_t server = -1;
    std::map<pid_t, Ended> children;
    bool reading = false;
    unsigned generation = 0;  // of the fork server: a wait armed for an earlier one is ignored
    std::string call_filter;  // handed to each fork server started

    bool running() const { return server > 0 && socket.is_open(); }

    bool launch(std::string& error) {
        int ends[2];
        if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, ends) != 0) {
            error = std::string("socketpair: ") + std::strerror(errno);
            return false;
        }
        UniqueFd ours(ends[0]), theirs(ends[1]);
        std::vector<std::string> words{"__vet-server"};
        if (!call_filter.empty()) words.push_back(call_filter);
        server = spawn_self(words, theirs.get(), error);
        if (server < 0) {
            error = "cannot start the vetting fork server: " + error;
            return false;
        }
        ::fcntl(ours.get(), F_SETFL, ::fcntl(ours.get(), F_GETFL) | O_NONBLOCK);
        socket.assign(ours.release());
        read_later();
        return true;
    }

    void shut() {
        boost::system::error_code ignored;
        socket.close(ignored);
        reading = false;
        ++generation;
        if (server > 0) {
            ::kill(server, SIGKILL);
            while (::waitpid(server, nullptr, 0) < 0 && errno == EINTR) {
            }
        }
        server = -1;
        // Children it had forked die with it (their parent-death signal); nobody reports their end.
        auto orphans = std::move(children);
        children.clear();
        for (auto& [pid, ended] : orphans)
            if (ended) ended(std::nullopt);
    }

    void read_later() {
        if (reading) return;
        reading = true;
        socket.async_wait(asio::posix::stream_descriptor::wait_read,
                          [this, armed = generation](boost::system::error_code ec) {
            if (ec) return;  // cancelled: this may be gone, and its flags are reset already
            if (armed != generation) return;
            reading = false;
            if (!drain()) {
                shut();
                return;
            }
            read_later();
        });
    }

    /// Handles every message waiting; false once the fork server is gone.
    bool drain() {
        char buffer[256];
        for (;;) {
            const ssize_t got = receive_message(socket.native_handle(), buffer, sizeof buffer - 1);
            if (got < 0) return errno == EAGAIN || errno == EWOULDBLOCK;
            if (got == 0) return false;
            handle(std::string_view(buffer, static_cast<std::size_t>(got)));
        }
    }

    /// "EXIT pid status": a child ended. (Replies to a start are read by start() itself.)
    void handle(std::string_view message) {
        pid_t pid = 0;
        int status = 0;
        if (std::sscanf(std::string(message).c_str(), "EXIT %d %d", &pid, &status) != 2) return;
        const auto it = children.find(pid);
        if (it == children.end()) return;
        Ended ended = std::move(it->second);
        children.erase(it);
        if (ended) ended(status);
    }
};

VettingForkServer::VettingForkServer(asio::io_context& io) : state_(std::make_unique<State>(io)) {}

VettingForkServer::~VettingForkServer() {
    state_->children.clear();
    state_->shut();
}

pid_t VettingForkServer::start(const std::string& name, const std::filesystem::path& image,
                               const std::filesystem::path& config_folder, unsigned workers, int report_fd,
                               Ended ended, std::string& error) {
    State& state = *state_;
    if (!state.running() && !state.launch(error)) return -1;
    std::string request = "VET";
    for (const std::string& word : {name, image.string(), config_folder.string(), std::to_string(workers)})
        request.append(1, '\0').append(word);
    request.push_back('\0');
    if (!send_message(state.socket.native_handle(), request, report_fd)) {
        error = std::string("the vetting fork server is gone: ") + std::strerror(errno);
        state.shut();
        return -1;
    }
    // Its answer comes at once; an EXIT of an earlier child may come first.
    for (;;) {
        pollfd wait{state.socket.native_handle(), POLLIN, 0};
        if (::poll(&wait, 1, kReplyWaitMs) <= 0) {
            error = "the vetting fork server does not answer";
            state.shut();
            return -1;
        }
        char buffer[256];
        const ssize_t got = receive_message(state.socket.native_handle(), buffer, sizeof buffer - 1);
        if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) continue;
        if (got <= 0) {
            error = "the vetting fork server is gone";
            state.shut();
            return -1;
        }
        const std::string_view message(buffer, static_cast<std::size_t>(got));
        if (message.starts_with("EXIT ")) {
            state.handle(message);
            continue;
        }
        pid_t pid = 0;
        if (message.starts_with("PID ") && std::sscanf(std::string(message).c_str(), "PID %d", &pid) == 1 && pid > 0) {
            state.children[pid] = std::move(ended);
            return pid;
        }
        error = "the vetting fork server could not fork: " + std::string(message.substr(std::min<std::size_t>(4, message.size())));
        return -1;
    }
}

void VettingForkServer::forget(pid_t pid) { state_->children.erase(pid); }

bool VettingForkServer::start_now(const std::string& call_filter, std::string& error) {
    state_->call_filter = call_filter;
    return state_->running() || state_->launch(error);
}

int run_vetting_fork_server(int argc, char** args) {
    // It dies with its worker; its children die with it (run_vetting_child asks for that too).
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() == 1) return 0;  // the worker is already gone
    sigset_t child;
    sigemptyset(&child);
    sigaddset(&child, SIGCHLD);
    ::sigprocmask(SIG_BLOCK, &child, nullptr);
    const UniqueFd ended(::signalfd(-1, &child, SFD_CLOEXEC | SFD_NONBLOCK));
    if (!ended) return 1;
    // Done once here, not in each child: every page a child touches costs it a copy.
    prepare_vetting_process();
    // The worker's sandbox: its file rules are inherited; the call filter is installed here, after
    // the set-up above, and every vetting process forked from now on has it.
    if (argc >= 2) {
        std::string why;
        if (!install_vetting_call_filter(args[1], why)) {
            send_message(kSocketFd, "ERR sandbox: " + why);
            return 1;
        }
    }
    for (;;) {
        pollfd waits[2] = {{kSocketFd, POLLIN, 0}, {ended.get(), POLLIN, 0}};
        if (::poll(waits, 2, -1) < 0) {
            if (errno == EINTR) continue;
            return 1;
        }
        if (waits[1].revents & POLLIN) {
            signalfd_siginfo info;
            while (::read(ended.get(), &info, sizeof info) > 0) {
            }
            int status = 0;
            for (pid_t pid; (pid = ::waitpid(-1, &status, WNOHANG)) > 0;) {
                send_message(kSocketFd, "EXIT " + std::to_string(pid) + " " + std::to_string(status));
            }
        }
        if (!(waits[0].revents & (POLLIN | POLLHUP | POLLERR))) continue;
        char buffer[8192];
        int report = -1;
        const ssize_t got = receive_message(kSocketFd, buffer, sizeof buffer, &report);
        if (got <= 0) return 0;  // the worker closed its end
        const UniqueFd report_fd(report);
        std::vector<std::string> request = words(buffer, static_cast<std::size_t>(got));
        if (request.size() != 5 || request[0] != "VET" || !report_fd) {
            send_message(kSocketFd, "ERR malformed request");
            continue;
        }
        const pid_t pid = ::fork();
        if (pid < 0) {
            send_message(kSocketFd, std::string("ERR ") + std::strerror(errno));
            continue;
        }
        if (pid == 0) {
            // The vetting process: the report pipe as descriptor 3 (over the socket), signals as
            // a freshly started process has them.
            ::dup2(report_fd.get(), kVettingReportFd);
            ::close(ended.get());
            ::sigprocmask(SIG_UNBLOCK, &child, nullptr);
            std::vector<char*> argv;
            for (auto& word : request) argv.push_back(word.data());
            argv.push_back(nullptr);
            argv[0] = const_cast<char*>("__vet");
            ::_exit(run_vetting_child(static_cast<int>(request.size()), argv.data(), true));
        }
        send_message(kSocketFd, "PID " + std::to_string(pid));
    }
}

}  // namespace cspd
