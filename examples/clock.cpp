// Server-sent events (SDK 2.1, C++ layer): GET /csp/clock streams a "tick" event once a second,
// the first at once, to as many clients as connect; ?n=N ends the stream after N events.
//   curl -N http://127.0.0.1:8080/csp/clock
//   new EventSource("/csp/clock").addEventListener("tick", e => console.log(e.data))
// Each client is a stream with a loop timer of its own: no thread, nothing shared. When the
// server drains, each stream says goodbye and ends, so the drain need not wait for it.
#include <csp/csp.hpp>

#include <charconv>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <memory>

namespace {
using namespace std::chrono_literals;

struct Clock : std::enable_shared_from_this<Clock> {
    csp::stream events;
    unsigned sent = 0;
    unsigned limit = 0;  // 0: until the client leaves

    void tick() {
        char data[80];
        const std::time_t now = std::time(nullptr);
        std::tm utc{};
        gmtime_r(&now, &utc);
        char when[32];
        std::strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &utc);
        std::snprintf(data, sizeof data, "{\"time\":\"%s\",\"n\":%u}", when, sent + 1);
        // CSP_AGAIN (a client that reads slowly) is fine here: one small event a second; the host
        // cuts a stream that falls far behind.
        if (events.event("tick", data) < 0) return;  // gone: on_abort ends the stream
        if (limit && ++sent >= limit) {
            events.end();
            return;
        }
        if (!limit) ++sent;
        events.after(1s, [self = shared_from_this()] { self->tick(); });
    }
};

int clock_handler(const csp::request& req, csp::reply& out) {
    if (req.method() != "GET" && req.method() != "HEAD") {
        out.header("Allow", "GET, HEAD");
        return 405;
    }
    out.content_type("text/event-stream");
    out.header("Cache-Control", "no-cache");
    auto clock = std::make_shared<Clock>();
    if (auto n = req.query_arg("n")) std::from_chars(n->data(), n->data() + n->size(), clock->limit);
    clock->events = csp::stream::start(out, 200);
    if (!clock->events) return 503;
    clock->events.on_abort([clock](int reason) {
        if (reason == CSP_ABORT_DRAINING) clock->events.event("bye", "the server is stopping");
        clock->events.end();  // the client is gone, or soon will be
    });
    clock->tick();
    return CSP_DEFERRED;
}

}  // namespace

CSP_CPP_HANDLER(clock_handler)
