// Real nginx (Debian's nginx-light) for tests that put cspd behind it: in the foreground, with a
// prefix, pid file, logs and temporary folders of its own, on a port the kernel picked.
#pragma once

#include "temp_dir.hpp"

#include <sys/types.h>

#include <string>

namespace cspd::test {

/// A port free on 127.0.0.1 now (bound and let go).
unsigned short free_port();

class Nginx {
public:
    /// Starts nginx with `http_block`, the inside of its http { } block, and `main_block` at the
    /// top level (load_module, stream { }), in which "@PORT@" stands for port(); a server there
    /// should answer GET /-/healthy (proxied to cspd, say): the constructor waits for it. Throws if
    /// nginx does not start.
    explicit Nginx(const std::string& http_block, const std::string& main_block = "");
    ~Nginx();
    Nginx(const Nginx&) = delete;
    Nginx& operator=(const Nginx&) = delete;

    unsigned short port() const { return port_; }
    std::string error_log() const;

private:
    TempDir dir_;
    unsigned short port_;
    pid_t pid_ = -1;
};

}  // namespace cspd::test
