#include "serving/access_log.hpp"

#include "common/clocks.hpp"
#include "http/forwarded_for.hpp"

#include <spdlog/spdlog.h>

#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <utility>
#include <system_error>

namespace cspd {
namespace {

int open_log(const std::filesystem::path& path) {
    if (path == "-") {
        const int fd = ::fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
        if (fd < 0) throw std::system_error(errno, std::system_category(), "access log: standard output");
        return fd;
    }
    // Non-blocking: a FIFO nobody reads must hold back the writer thread, never a loop or the exit.
    const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NONBLOCK, 0640);
    if (fd < 0) throw std::system_error(errno, std::system_category(), "access log " + path.string());
    return fd;
}

bool is_pipe(int fd) {
    struct stat st {};
    return ::fstat(fd, &st) == 0 && S_ISFIFO(st.st_mode);
}

std::size_t count_lines(std::string_view text) { return static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n')); }

}  // namespace

void AccessLog::check(const std::filesystem::path& path) { ::close(open_log(path)); }

AccessLog::AccessLog(std::filesystem::path path, AccessLogFormat format)
    : path_(std::move(path)), format_(format), fd_(open_log(path_)), pipe_(is_pipe(fd_)) {}

void AccessLog::start() { writer_ = std::thread([this] { write_batches(); }); }

AccessLog::~AccessLog() {
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
        give_up_at_ = std::chrono::steady_clock::now() + std::chrono::seconds(1);
    }
    wake_.notify_all();
    switched_.notify_all();
    if (writer_.joinable()) writer_.join();
    if (lost_at_stop_)
        spdlog::error("access log {}: {} lines lost at the stop: nobody read the pipe", path_.string(), lost_at_stop_);
    ::close(fd_);
    if (next_fd_ >= 0) ::close(next_fd_);
}

bool AccessLog::hand_over(std::string&& batch) {
    if (batch.empty()) return true;  // (an empty batch is a reopen's mark)
    {
        std::lock_guard lock(mutex_);
        if (stopping_ || behind_ + batch.size() > kMaxBehind) return false;
        behind_ += batch.size();
        queue_.push_back(std::move(batch));
    }
    wake_.notify_one();
    return true;
}

void AccessLog::reopen() {
    int fd;
    try {
        fd = open_log(path_);
    } catch (const std::exception& e) {
        spdlog::error("SIGUSR1: {}; the access log goes on to the old file", e.what());
        return;
    }
    std::unique_lock lock(mutex_);
    if (next_fd_ >= 0) ::close(next_fd_);  // two reopens in a row: the second's file serves
    next_fd_ = fd;
    queue_.emplace_back();  // the mark: batches before it go to the old file
    const std::uint64_t ticket = ++reopens_;
    wake_.notify_one();
    // Batches to a file take the writer no time; one to a pipe nobody reads is given up on.
    switched_.wait(lock, [&] { return switched_to_ >= ticket || stopping_; });
    spdlog::info("SIGUSR1: reopened the access log {}", path_.string());
}

void AccessLog::write_batches() {
    std::unique_lock lock(mutex_);
    for (;;) {
        wake_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
        if (queue_.empty()) return;  // stopping, and all written
        std::string batch = std::move(queue_.front());
        queue_.pop_front();
        if (batch.empty()) {  // a reopen's mark
            if (next_fd_ >= 0) {
                ::close(fd_);
                fd_ = std::exchange(next_fd_, -1);
                pipe_ = is_pipe(fd_);
            }
            ++switched_to_;
            switched_.notify_all();
            continue;
        }
        lock.unlock();
        write_out(batch);
        lock.lock();
        behind_ -= batch.size();
    }
}

bool AccessLog::wait_writable() {
    // As long as it takes, but no longer than a second into the stop, and not past a reopen.
    for (;;) {
        {
            std::lock_guard lock(mutex_);
            if (switched_to_ < reopens_) return false;  // a reopen waits behind this full pipe
            if (stopping_ && std::chrono::steady_clock::now() > give_up_at_) return false;
        }
        pollfd watched{fd_, POLLOUT, 0};
        const int ready = ::poll(&watched, 1, 100);
        if (ready > 0) return true;
        if (ready < 0 && errno != EINTR) return false;
    }
}

bool AccessLog::write_out(std::string_view batch) {
    while (!batch.empty()) {
        std::size_t size = batch.size();
        if (pipe_ && size > PIPE_BUF) {
            // Whole lines, at most PIPE_BUF bytes: a pipe writes those in one piece.
            const std::size_t end = batch.rfind('\n', PIPE_BUF - 1);
            size = end == std::string_view::npos ? std::min(batch.size(), std::size_t(PIPE_BUF)) : end + 1;
        }
        const ssize_t n = ::write(fd_, batch.data(), size);
        if (n > 0) {
            batch.remove_prefix(static_cast<std::size_t>(n));
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) && wait_writable()) continue;
        const int error = n < 0 ? errno : 0;
        if (error == EAGAIN || error == EWOULDBLOCK) {
            bool stopping;
            {
                std::lock_guard lock(mutex_);
                stopping = stopping_;
            }
            if (stopping) {
                lost_at_stop_ += count_lines(batch);
                return false;
            }
        }
        spdlog::error("access log {}: {} lines lost: {}", path_.string(), count_lines(batch),
                      error == EAGAIN || error == EWOULDBLOCK ? "the pipe stayed full past a reopen"
                                                              : std::strerror(error));
        return false;
    }
    return true;
}

void AccessLines::add(const ClientInfo& client, const HttpRequest* request, const AnswerFacts& facts) {
    AccessRecord record;
    record.unix_us = unix_now_us();
    record.client_address = client.address;
    record.client_port = client.port;
    char named_text[IpAddress::kMaxText];
    if (trusted_ && request && !client.status_port())
        if (const std::optional<IpAddress> named = trusted_->client_behind(client.ip(), *request)) {
            record.client_address = {named_text, named->format(named_text)};
            record.client_port = 0;
        }
    if (request) {
        record.method = request->method;
        record.target = request->target;
        record.http_major = request->http_major;
        record.http_minor = request->http_minor;
        record.referer = request->header("referer");
        record.user_agent = request->header("user-agent");
    }
    record.status = facts.status;
    record.intended_status = facts.intended_status;
    record.bytes = facts.bytes;
    record.body_bytes = facts.body_bytes;
    if (facts.began_ns)
        record.duration_us = std::uint64_t(std::max<std::int64_t>(0, monotonic_now_ns() - facts.began_ns) / 1000);
    record.responder = facts.responder;
    record.handler = facts.handler;
    record.handler_hash = facts.handler_hash;
    record.cached = facts.cached;
    record.request_id = facts.request_id;
    record.worker = worker_;
    append_access_line(lines_, record, log_.format(), time_);
    ++count_;
    if (lines_.size() >= kBatch) hand_over();
}

void AccessLines::hand_over() {
    if (lines_.empty()) return;
    std::string batch;
    batch.swap(lines_);
    if (!log_.hand_over(std::move(batch)) && dropped_) bump(*dropped_, count_);
    count_ = 0;
    lines_.reserve(kBatch + 1024);
}

}  // namespace cspd
