// The master's side of topics across hosts (--cluster): what the workers publish goes out
// through the cluster link, once for the host; what other hosts publish comes in and goes to
// every worker (each delivers to its own subscribers). The hub keeps which topics each worker's
// conversations subscribe to, so that the host subscribes in Redis to their union, and forgets a
// worker's when it exits, however it exited.
//
// On the master's loop. The relay's threads post what they hear there.
#pragma once

#include "cluster/cluster_link.hpp"

#include <sys/types.h>

#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>

namespace boost::asio {
class io_context;
}

namespace cspd {

struct SharedStats;
class TopicRelay;

class TopicHub {
public:
    /// Binds the master's relay socket (throws if it cannot) and starts the link.
    TopicHub(boost::asio::io_context& io, const ClusterOptions& options, unsigned workers, SharedStats& stats);
    ~TopicHub();
    TopicHub(const TopicHub&) = delete;
    TopicHub& operator=(const TopicHub&) = delete;

    /// A process the master started ended: the topics it subscribed to are its no more.
    void process_gone(pid_t pid);
    /// A worker started as `pid` (which may be a reaped one's again).
    void process_started(pid_t pid) { gone_.erase(pid); }
    /// Copies the link's figures where /-/status and /metrics read them.
    void report();

    /// Topics one worker may hold at once here; past it, more are not subscribed across hosts (logged).
    static constexpr std::size_t kMaxTopicsPerWorker = 100'000;

private:
    void interest(pid_t worker, const std::string& topic, bool subscribed);
    /// Gives a publish's bytes back to the worker that reserved them, if it still runs there.
    void settle(std::uint64_t cookie, std::size_t bytes);

    boost::asio::io_context& io_;
    SharedStats& stats_;
    ClusterLink link_;
    std::unique_ptr<TopicRelay> relay_;
    std::unordered_map<pid_t, std::unordered_set<std::string>> by_worker_;
    std::unordered_map<std::string, unsigned> holders_;  // workers holding each topic
    std::unordered_set<pid_t> gone_;                       // reaped: what they still said is not heard
    bool said_too_many_ = false;
};

}  // namespace cspd
