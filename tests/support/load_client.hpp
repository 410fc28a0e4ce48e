// A small epoll load generator for the load tests: many keep-alive connections on
// one thread, each sending a request as soon as its previous answer is complete.
// Bounded in time and connections; loopback only.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

namespace cspd::test {

struct LoadResult {
    std::uint64_t responses = 0;   ///< complete 200 responses
    std::uint64_t bad_status = 0;  ///< complete responses with another status
    std::uint64_t failures = 0;    ///< connect errors, resets, early closes
    std::size_t connected = 0;     ///< connections that were established
};

struct LoadOptions {
    unsigned short port = 0;
    std::size_t connections = 100;
    std::chrono::milliseconds duration{1000};
    std::string request = "GET /csp/hello HTTP/1.1\r\nHost: localhost\r\n\r\n";
    /// Called about once a second while the load runs, with the seconds elapsed.
    std::function<void(int)> every_second;
};

LoadResult run_load(const LoadOptions& options);

}  // namespace cspd::test
