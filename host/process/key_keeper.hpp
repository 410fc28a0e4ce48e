// The master's side of the key process: starts `cspd __keys` (as the user cspd started as, so
// that it can read the keys), gives it a channel for each worker, and starts it again if it
// dies, handing the new one every live worker's channel. Meanwhile handshakes fail fast (see
// KeyClient). A lone server (--workers 0) keeps one the same way for itself.
#pragma once

#include "common/unique_fd.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <sys/types.h>

#include <map>

namespace cspd {

struct Config;

class KeyKeeper {
public:
    /// Starts the key process. Throws if it cannot.
    KeyKeeper(boost::asio::io_context& io, const Config& config);
    ~KeyKeeper();

    /// A new channel for worker `index` (replacing its last one): the end the worker gets.
    /// Invalid if the key process cannot be told of it now (it is given on the next start).
    UniqueFd channel_for(unsigned index);

    /// The master reaped `pid`: true if it was the key process (which is then started again).
    bool reaped(pid_t pid, int status);

    pid_t pid() const { return pid_; }
    /// The server is stopping: a key process that ends now is not started again.
    void stop() { stopping_ = true; }

private:
    void start();
    void watch();
    void on_exit(int status);

    const Config& config_;
    boost::asio::steady_timer timer_;
    UniqueFd control_;                    // ours; the key process has the other end as 3
    std::map<unsigned, UniqueFd> kept_;   // each worker's channel, the key process's end
    pid_t pid_ = -1;
    bool stopping_ = false;
    bool start_due_ = false;  // it died: the next watch() starts it (at most twice a second)
    bool restarting_ = false;  // it died: its next start is said at info level
};

}  // namespace cspd
