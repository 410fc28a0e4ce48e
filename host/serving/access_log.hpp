// The access log (--access-log): every answered request on record, one line each. Each loop
// formats its lines into a buffer of its own (AccessLines) and hands the buffer over when it
// is full, and once a second, to the process's AccessLog, whose writer thread appends batches
// to the file. A loop never waits for the disk: while the writer is more than kMaxBehind bytes
// behind (a slow disk, a pipe nobody reads), a loop drops its batch and counts the lines
// (cspd_access_log_dropped_total). The file is opened with O_APPEND and written a batch (for a
// pipe, at most PIPE_BUF bytes of whole lines) per write, so the lines of every worker land
// whole in one file. SIGUSR1 reopens it (logrotate's "move, then signal").
#pragma once

#include "common/ip_address.hpp"
#include "http/forwarded_for.hpp"
#include "http/request.hpp"
#include "routing/access_log_line.hpp"
#include "routing/exchange.hpp"
#include "stats/shared_stats.hpp"

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <filesystem>
#include <mutex>
#include <string>
#include <thread>

namespace cspd {

class AccessLog {
public:
    static constexpr std::size_t kMaxBehind = 4 * 1024 * 1024;

    /// Throws with the reason if `path` cannot be opened for appending (it is created if missing).
    static void check(const std::filesystem::path& path);
    /// Opens `path` for appending ("-": standard output); throws with the reason if it cannot.
    /// Lines handed over wait for start().
    AccessLog(std::filesystem::path path, AccessLogFormat format);
    /// Starts the writer thread: a serving process does once its sandbox's file rules bind the
    /// thread that starts it (process/sandbox). Once.
    void start();
    /// Writes what was handed over, waiting at most a second for a pipe nobody reads, then stops.
    ~AccessLog();
    AccessLog(const AccessLog&) = delete;
    AccessLog& operator=(const AccessLog&) = delete;

    AccessLogFormat format() const { return format_; }

    /// Any thread: takes `batch` (whole lines) for the writer; false, taking nothing, while the
    /// writer is too far behind.
    bool hand_over(std::string&& batch);
    /// SIGUSR1 (any thread): opens the path anew. What was handed over before goes to the old
    /// file, what is handed over once it returns to the new one. On failure logs why and keeps
    /// writing to the old file.
    void reopen();

private:
    void write_batches();
    /// Writes `batch` whole; false if it could not (logged).
    bool write_out(std::string_view batch);
    bool wait_writable();

    const std::filesystem::path path_;
    const AccessLogFormat format_;
    int fd_;
    bool pipe_ = false;  // writes of at most PIPE_BUF bytes, whole lines, are never interleaved

    std::mutex mutex_;
    std::condition_variable wake_;
    std::condition_variable switched_;
    std::deque<std::string> queue_;  // batches; an empty one marks where a reopen switches files
    std::size_t behind_ = 0;     // bytes handed over and not written yet
    int next_fd_ = -1;           // from reopen(), for the writer to switch to at the mark
    std::uint64_t reopens_ = 0;  // asked for, and done by the writer
    std::uint64_t switched_to_ = 0;
    bool stopping_ = false;
    std::chrono::steady_clock::time_point give_up_at_;  // stopping: a pipe still full then is given up on
    std::size_t lost_at_stop_ = 0;                      // writer thread: lines given up on, told once
    std::thread writer_;
};

/// What an access log line says of one answer, besides its request and its client: whatever the
/// protocol, its session fills these in as the answer goes out.
struct AnswerFacts {
    int status = 0;
    int intended_status = 0;  ///< with a 499: what the client was going to get (0: not known)
    std::uint64_t bytes = 0;
    std::uint64_t body_bytes = 0;
    std::int64_t began_ns = 0;  ///< monotonic, when the request was routed (0: not known)
    Responder responder = Responder::none;
    std::string_view handler;  ///< the name and version of the handler that answered, if one did
    std::uint64_t handler_hash = 0;
    bool cached = false;
    std::string_view request_id;

    /// HTTP/1: `answer` went out (the first bytes of an answer begin with its head).
    void count_sent(std::string_view answer) {
        body_bytes += answer.size() - (bytes == 0 ? response_head_size(answer) : 0);
        bytes += answer.size();
    }
    /// A protocol that frames head and body apart (HTTP/2): `head` bytes of head, `body` of body.
    void count_parts(std::uint64_t head, std::uint64_t body) {
        bytes += head + body;
        body_bytes += body;
    }
};

/// A loop's lines, handed to its AccessLog in batches. Loop thread only.
class AccessLines {
public:
    /// `trusted`: --trust-proxy's peers, whose lines name the client they forward (null: none).
    AccessLines(AccessLog& log, unsigned worker, const ProxyTrust* trusted = nullptr)
        : log_(log), worker_(worker), trusted_(trusted && !trusted->empty() ? trusted : nullptr) {}
    ~AccessLines() { hand_over(); }
    AccessLines(const AccessLines&) = delete;
    AccessLines& operator=(const AccessLines&) = delete;

    /// Lines the log could not take are counted in `dropped` (the loop's) from now on.
    void count_dropped_in(Counter& dropped) { dropped_ = &dropped; }

    /// A line for the answer `facts` describes to `request` (null: it could not be parsed) from
    /// `client`, stamped now; a full buffer goes to the log.
    void add(const ClientInfo& client, const HttpRequest* request, const AnswerFacts& facts);
    /// Hands what is buffered to the log (once a second, and at the loop's end).
    void hand_over();

private:
    static constexpr std::size_t kBatch = 32 * 1024;

    AccessLog& log_;
    unsigned worker_;
    const ProxyTrust* trusted_;
    Counter* dropped_ = nullptr;
    AccessTime time_;
    std::string lines_;
    std::size_t count_ = 0;  // lines in lines_
};

}  // namespace cspd
