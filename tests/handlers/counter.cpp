// Keeps state across requests through init/cleanup; cleanup writes a marker file
// (path from the environment) so tests can see it ran on unload.
#include <csp/csp.hpp>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <string>

namespace {
struct Counter {
    std::atomic<unsigned long> hits{0};
};

int init(void** state) {
    *state = new (std::nothrow) Counter;
    return *state ? 0 : 1;
}

void cleanup(void* state) {
    auto* counter = static_cast<Counter*>(state);
    if (const char* marker = std::getenv("CSPD_TEST_CLEANUP_MARKER")) {
        if (FILE* f = std::fopen(marker, "a")) {
            std::fprintf(f, "cleanup %lu\n", counter->hits.load());
            std::fclose(f);
        }
    }
    delete counter;
}

int handle(const csp_request* raw_request, csp_reply* raw_reply) {
    csp::request request(raw_request);
    csp::reply reply(raw_reply);
    unsigned long n = ++request.state<Counter>()->hits;
    reply.content_type("text/plain");
    reply << "hits " << std::to_string(n);
    return 200;
}
}  // namespace

CSP_HANDLER_WITH_HOOKS(handle, init, cleanup)
