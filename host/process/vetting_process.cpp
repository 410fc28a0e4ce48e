#include "process/vetting_process.hpp"

#include "common/unique_fd.hpp"
#include "process/spawn_self.hpp"
#include "process/vetting_fork_server.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <spdlog/spdlog.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>

namespace cspd {
namespace asio = boost::asio;
using namespace std::chrono_literals;

namespace {
using Clock = std::chrono::steady_clock;

// While it reports, whether the child has ended is looked at this often...
constexpr auto kExitPoll = 20ms;
// ...and, once its pipe is closed, this often; one that lives on is killed after this long: its
// report is complete, whatever it does now.
constexpr auto kReapInterval = 5ms;
constexpr auto kReapPatience = 2s;
// A child that has ended while a process it started still holds its pipe: what it wrote is read
// for this long, then its run ends anyway.
constexpr auto kPipeGrace = 100ms;

void parse_lines(std::string& pending, VettingReport& report) {
    std::size_t end;
    while ((end = pending.find('\n')) != std::string::npos) {
        const std::string line = pending.substr(0, end);
        pending.erase(0, end + 1);
        if (line == "load") report.phase = HandlerPhase::load;
        else if (line == "init") report.phase = HandlerPhase::init;
        else if (line == "cleanup") report.phase = HandlerPhase::cleanup;
        else if (line == "ok") report.ok = true;
        else if (line.rfind("refused ", 0) == 0) report.refused = true, report.refusal = line.substr(8);
    }
}

/// Starts `cspd __vet ...` with the pipe's write end as descriptor 3; its pid, or -1 with `error` set.
pid_t spawn_child(const std::string& name, const std::filesystem::path& image,
                  const std::filesystem::path& config_folder, unsigned workers, int report_fd, std::string& error) {
    const pid_t pid = spawn_self({"__vet", name, image.string(), config_folder.string(), std::to_string(workers)},
                                 report_fd, error);
    if (pid < 0) error = "cannot start the vetting process: " + error;
    return pid;
}
}  // namespace

struct VettingProcess::State {
    State(asio::io_context& io, std::chrono::seconds limit, Done on_done)
        : pipe(io), deadline(io), reaper(io), phase_limit(limit), done(std::move(on_done)) {}

    asio::posix::stream_descriptor pipe;
    asio::steady_timer deadline, reaper;
    std::chrono::seconds phase_limit;
    Done done;
    pid_t pid = -1;
    VettingForkServer* forks = nullptr;  // set when it forked the child: it reaps it, and says how it ended
    bool exited = false, pipe_done = false;
    Clock::time_point exited_at{};
    VettingReport report;
    std::string pending;
    std::array<char, 512> chunk{};
    HandlerPhase timed_phase = HandlerPhase::none;
    Clock::time_point started = Clock::now(), pipe_closed{};
    bool over = false;  // reaped, or cancelled: nothing more happens

    void arm_deadline(const std::weak_ptr<VettingProcess>& self) {
        deadline.expires_after(phase_limit);
        deadline.async_wait([this, self](boost::system::error_code ec) {
            const auto alive = self.lock();  // held: done() may drop the last other reference
            if (ec || !alive || over || pipe_done) return;
            report.timed_out = true;
            ::kill(pid, SIGKILL);
            // Not its pipe's end: a process it started may hold the pipe open. Its exit ends it.
            close_pipe();
        });
    }

    void close_pipe() {
        boost::system::error_code ignored;
        pipe.close(ignored);
        if (!pipe_done) pipe_closed = Clock::now();
        pipe_done = true;
        deadline.cancel();  // what it reported is complete: no deadline may kill it now
    }

    void read(const std::weak_ptr<VettingProcess>& self) {
        pipe.async_read_some(asio::buffer(chunk), [this, self](boost::system::error_code ec, std::size_t n) {
            const auto alive = self.lock();
            if (!alive || over || pipe_done) return;
            if (!ec) {
                pending.append(chunk.data(), n);
                parse_lines(pending, report);
                if (report.phase != timed_phase) {  // each phase gets the whole limit
                    timed_phase = report.phase;
                    arm_deadline(self);
                }
                read(self);
                return;
            }
            close_pipe();  // the end of the report (or a broken pipe): the child is done, one way or another
        });
    }

    /// Looks now and then whether the child has ended; the run ends once it has and its report is
    /// read (or, should a process the child started still hold the pipe, a moment later).
    void watch_exit(const std::weak_ptr<VettingProcess>& self) {
        if (!exited && !forks && ::waitpid(pid, &report.status, WNOHANG) == pid) note_exit();
        if (exited && !pipe_done && Clock::now() - exited_at > kPipeGrace) {
            // This thread may have been away longer than the grace: what the child wrote may still
            // wait in the pipe, unread. Read it now, then end whoever else holds the pipe open.
            drain_pipe();
            close_pipe();
        }
        if (exited && pipe_done) {
            end();
            return;
        }
        if (pipe_done && !exited && Clock::now() - pipe_closed > kReapPatience) ::kill(pid, SIGKILL);
        reaper.expires_after(pipe_done ? kReapInterval : kExitPoll);
        reaper.async_wait([this, self](boost::system::error_code ec) {
            const auto alive = self.lock();
            if (!ec && alive && !over) watch_exit(self);
        });
    }

    /// Reads what waits in the pipe now, without waiting for more.
    void drain_pipe() {
        if (!pipe.is_open()) return;
        const int fd = pipe.native_handle();
        ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
        // (A read that completed earlier has had its handler run before this one: handlers run in
        // the order they were queued. Its own buffer is left alone.)
        char bytes[512];
        for (;;) {
            const ssize_t n = ::read(fd, bytes, sizeof bytes);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) break;
            pending.append(bytes, static_cast<std::size_t>(n));
        }
        parse_lines(pending, report);
    }

    void note_exit() {
        exited = true;
        exited_at = Clock::now();
    }

    /// The fork server reaped the child (a status), or was lost with it (none).
    void ended(std::optional<int> status) {
        if (over) return;
        if (status) {
            report.status = *status;
        } else if (report.ok) {
            report.status = 0;  // it had said all it had to say
        } else {
            report.error = "the vetting fork server was lost while this version was being vetted";
        }
        note_exit();
        if (!status) {  // nothing more will be known: what was written is all there is
            drain_pipe();
            close_pipe();
        }
        if (pipe_done) end();
    }

    void end() {
        over = true;
        deadline.cancel();
        reaper.cancel();
        report.elapsed_ms = std::chrono::duration<double, std::milli>(Clock::now() - started).count();
        const VettingReport copy = report;  // done() may end this process object
        Done call = std::move(done);
        if (call) call(copy);
    }
};

VettingProcess::VettingProcess(std::unique_ptr<State> state) : state_(std::move(state)) {}

std::shared_ptr<VettingProcess> VettingProcess::start(asio::io_context& io, VettingForkServer* forks,
                                                      const std::string& name,
                                                      const std::filesystem::path& image,
                                                      const std::filesystem::path& config_folder, unsigned workers,
                                                      std::chrono::seconds phase_limit, Done done) {
    auto process = std::shared_ptr<VettingProcess>(
        new VettingProcess(std::make_unique<State>(io, phase_limit, std::move(done))));
    State& state = *process->state_;
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) {
        state.report.error = std::string("pipe: ") + std::strerror(errno);
    } else {
        UniqueFd read_end(fds[0]), write_end(fds[1]);
        std::string forking_error;
        if (forks)
            state.pid = forks->start(
                name, image, config_folder, workers, write_end.get(),
                [weak = std::weak_ptr<VettingProcess>(process)](std::optional<int> status) {
                    if (auto self = weak.lock()) self->state_->ended(status);
                },
                forking_error);
        if (state.pid > 0) {
            state.forks = forks;
        } else {
            if (!forking_error.empty()) spdlog::warn("{}; starting vetting processes afresh", forking_error);
            state.pid = spawn_child(name, image, config_folder, workers, write_end.get(), state.report.error);
        }
        if (state.pid > 0) state.pipe.assign(read_end.release());
    }
    if (state.pid <= 0) {
        // Said from the io_context, as a verdict would be: the caller's state is settled by then.
        asio::post(io, [weak = std::weak_ptr<VettingProcess>(process)] {
            if (auto self = weak.lock(); self && !self->state_->over) {
                self->state_->over = true;
                const VettingReport copy = self->state_->report;
                Done call = std::move(self->state_->done);
                if (call) call(copy);
            }
        });
        return process;
    }
    state.arm_deadline(process);
    state.read(process);
    state.watch_exit(process);
    return process;
}

void VettingProcess::cancel() {
    State& state = *state_;
    if (state.over) return;
    state.over = true;
    state.done = nullptr;
    state.deadline.cancel();
    state.reaper.cancel();
    boost::system::error_code ignored;
    state.pipe.close(ignored);
    if (state.pid > 0) {
        ::kill(state.pid, SIGKILL);
        if (state.forks) {
            state.forks->forget(state.pid);  // its fork server reaps it
        } else {
            while (::waitpid(state.pid, nullptr, 0) < 0 && errno == EINTR) {
            }
        }
    }
}

VettingProcess::~VettingProcess() { cancel(); }

}  // namespace cspd
