// Long polling with deferred replies (SDK 2, C++ layer):
//   GET  /csp/longpoll/wait?timeout=S   waits up to S seconds (default 30, at most 50) for a message: 200 with
//                                       it, or 204 when none came
//   POST /csp/longpoll/post             delivers its body to every waiting client
// A waiter holds no thread: its reply is deferred, a loop timer ends the wait, and the posting
// request (on whichever event loop it arrived) finishes the replies from its own thread.
#include <csp/csp.hpp>

#include <atomic>
#include <charconv>
#include <chrono>
#include <list>
#include <memory>
#include <mutex>
#include <string>

namespace {

struct Waiter {
    csp::pending reply;
    std::atomic<bool> answered{false};  // the message, the timeout and the client leaving race: one wins
};

struct Board {
    std::mutex lock;
    std::list<std::shared_ptr<Waiter>> waiting;

    void forget(const std::shared_ptr<Waiter>& w) {
        std::lock_guard guard(lock);
        waiting.remove(w);
    }
};

unsigned seconds_in(std::optional<std::string_view> text, unsigned fallback) {
    unsigned value = fallback;
    if (text) std::from_chars(text->data(), text->data() + text->size(), value);
    return value > 0 && value <= 50 ? value : fallback;  // under cspd's --pending-timeout (60 s)
}

int wait(const csp::request& req, csp_reply* out, Board& board) {
    auto w = std::make_shared<Waiter>();
    w->reply = csp::pending::defer(out);
    if (!w->reply) return 503;
    const auto timeout = std::chrono::seconds(seconds_in(req.query_arg("timeout"), 30));
    const bool timed = w->reply.after(timeout, [&board, w] {
        if (w->answered.exchange(true)) return;
        board.forget(w);
        w->reply.finish(204);
    });
    if (!timed) {
        w->reply.finish(503);
        return CSP_DEFERRED;
    }
    w->reply.on_abort([&board, w](int) {
        if (w->answered.exchange(true)) return;
        board.forget(w);
        w->reply.finish(204);  // the host drops it: the client is gone
    });
    std::lock_guard guard(board.lock);
    board.waiting.push_back(std::move(w));
    return CSP_DEFERRED;
}

int post(const csp::request& req, csp::reply out, Board& board) {
    std::list<std::shared_ptr<Waiter>> waiting;
    {
        std::lock_guard guard(board.lock);
        waiting.swap(board.waiting);
    }
    unsigned delivered = 0;
    for (auto& w : waiting) {
        if (w->answered.exchange(true)) continue;
        w->reply.reply().content_type("text/plain");
        w->reply.reply() << req.body();
        delivered += w->reply.finish(200);
    }
    out.content_type("text/plain");
    out << "delivered to " << std::to_string(delivered) << "\n";
    return 200;
}

int longpoll(const csp_request* r, csp_reply* out) {
    csp::request req(r);
    Board& board = *req.state<Board>();
    if (req.path_info() == "/wait" && req.method() == "GET") return wait(req, out, board);
    if (req.path_info() == "/post" && req.method() == "POST") return post(req, csp::reply(out), board);
    csp::reply(out) << "GET /csp/longpoll/wait?timeout=S or POST /csp/longpoll/post\n";
    return 404;
}

int init(void** state) {
    *state = new Board();
    return 0;
}

void cleanup(void* state) { delete static_cast<Board*>(state); }

} // namespace

CSP_HANDLER_WITH_HOOKS(longpoll, init, cleanup)
