// The whole daemon: N event loops (threads, shared nothing), the handler
// watcher and signal handling on the control thread.
#pragma once

#include "config.hpp"

namespace cspd {

class Server {
public:
    explicit Server(Config config);

    /// Serves until SIGINT/SIGTERM, then drains. Returns the process exit code.
    /// Throws on a set-up failure (port in use, missing folder).
    int run();

private:
    Config config_;
};

} // namespace cspd
