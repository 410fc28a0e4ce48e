// One WebSocket conversation between its handler and the loop that carries its connection: what
// the SDK's csp_ws talks to. The handler's threads send whole messages into its outbox (framed
// there, bounded by the high-water mark: a loop is told CSP_AGAIN, any other thread waits), close
// it, and subscribe it to topics; the loop's WebSocketConversation (over HTTP/1's connection or an
// HTTP/2 stream) takes the bytes and reads the client. It pins the handler version that accepted it, keeps the handler's callbacks, and says
// whether the handler began the closing handshake.
//
// Lifetime: shared_ptr. Its WebSocketConversation holds it while the conversation lives (a
// blocking call's PendingExchange until the loop takes it over), and the worker's TopicBoard
// while it is subscribed; the handler's handle is valid until its on_close callback returns
// (the conversation calls it once, after shut(): later sends give -1).
#pragma once

#include "handler/version.hpp"
#include "http/request.hpp"
#include "handler/websocket_channel.hpp"
#include "serving/exchange/stream_outbox.hpp"
#include "serving/loop_inbox.hpp"

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace cspd {

struct HandlerStats;
struct LoopSlot;

class WebSocketLink final : public WebSocketChannel, public std::enable_shared_from_this<WebSocketLink> {
public:
    /// Who carries the conversation (the session); told on its loop.
    class Owner {
    public:
        /// Bytes (or the handler's close) wait in the outbox.
        virtual void link_output() = 0;
        /// `topic`, which the conversation subscribes to, lost messages for good across hosts.
        virtual void topic_gap(std::string_view topic) = 0;

    protected:
        ~Owner() = default;
    };

    /// `deflate`: the conversation speaks permessage-deflate (messages may be compressed both ways).
    WebSocketLink(std::shared_ptr<LoopInbox> inbox, const csp_ws_callbacks& callbacks,
                  std::shared_ptr<const HandlerVersion> version, HandlerStats* stats, bool deflate = false);

    /// The one way a handler's accept makes its link, whichever session or exchange will carry
    /// it: permessage-deflate when `deflate_allowed` (--no-ws-deflate says not) and `request`
    /// offers it, with the extension the answer names in `extensions` (else empty). Null when
    /// there is no memory: the accept fails, and the handler's answer goes as it is.
    static std::shared_ptr<WebSocketLink> accept(const HttpRequest& request, bool deflate_allowed,
                                                 std::shared_ptr<LoopInbox> inbox, const csp_ws_callbacks& callbacks,
                                                 std::shared_ptr<const HandlerVersion> version, HandlerStats* stats,
                                                 std::string& extensions) noexcept;

    /// Loop: the session that carries the conversation from now on.
    void attach(std::weak_ptr<Owner> owner) {
        owner_ = std::move(owner);
        carried_.store(true, std::memory_order_release);
    }
    /// Loop: the handler accepted, but nothing will carry the conversation (a blocking handler's
    /// client left during its call): it hears on_close 1006 and leaves its topics. `slot`: the
    /// loop's, for the watchdog's mark.
    void never_carried(LoopSlot* slot);

    // WebSocketChannel: from the handler, any thread.
    int send(std::string_view data, bool binary) noexcept override;
    int close(unsigned code, std::string_view reason) noexcept override;
    int subscribe(std::string_view topic) noexcept override;
    int unsubscribe(std::string_view topic) noexcept override;

    /// A message framed already (a publish to a topic): never waits, and leaves telling the loop to
    /// the caller, who may tell it once for many (`poke` set: call wake() on the loop). 0, CSP_AGAIN,
    /// or -1 (closed, or refused past the hard limit: the conversation is then cut).
    int put_frame(std::string_view frame, bool& poke) noexcept;
    /// On the loop: the session takes what waits (after put_frame said to poke).
    void wake();
    /// The relay's thread: `topic` lost messages for good (--cluster). The conversation is told on
    /// its loop; the published frames that come meanwhile wait, so that the client sees them after
    /// the gap, as they were published.
    void topic_gap(std::string_view topic);
    /// From any thread: the same, through the loop's inbox.
    void wake_later() { poke(); }
    LoopInbox& inbox() const { return *inbox_; }

    // The loop's side.
    /// Everything that waits, taken out; counted as the socket's until room() says otherwise.
    /// `closed_by_handler`: the handler's close frame (csp_ws_close) is the last of them.
    std::string take(bool& closed_by_handler) { return outbox_.take(&closed_by_handler); }
    /// The socket still holds `backlog` bytes: true when the handler's on_writable should run.
    bool room(std::size_t backlog) { return outbox_.set_backlog(backlog); }
    /// A sender ignored back-pressure past the hard limit: the conversation must be cut.
    bool overflowed() const { return overflowed_.load(std::memory_order_acquire); }
    /// Messages sent, and published messages delivered, since the last call (for the loop's counters).
    std::uint64_t take_sent() { return sent_.exchange(0, std::memory_order_relaxed); }
    std::uint64_t take_delivered() { return delivered_.exchange(0, std::memory_order_relaxed); }
    /// Nothing more can be sent: senders get -1 from now on, and waiting ones wake.
    void shut() { outbox_.close(); }

    const csp_ws_callbacks& callbacks() const { return callbacks_; }
    bool deflate() const { return deflate_; }
    const HandlerVersion& version() const { return *version_; }
    HandlerStats* stats() const { return stats_; }

    /// The topics it is subscribed to, and whether it has left them for good (closed): the
    /// TopicBoard's, under its lock.
    std::vector<std::string> topics;
    bool left_topics = false;

private:
    /// Cuts a writer that ignored back-pressure past the hard limit; the result's code.
    int after_write(StreamOutbox::Result result);
    int checked(StreamOutbox::Result& result);
    void poke();

    std::shared_ptr<LoopInbox> inbox_;
    std::weak_ptr<Owner> owner_;  // loop thread only: set after the handler's call, read by wake()
    csp_ws_callbacks callbacks_;
    std::shared_ptr<const HandlerVersion> version_;
    HandlerStats* stats_;
    const bool deflate_;
    StreamOutbox outbox_;
    std::atomic<bool> overflowed_{false};
    // Until a session carries it (a blocking handler's call still running), nobody takes from the
    // outbox: the accepting thread is told CSP_AGAIN rather than wait for room it would never get.
    std::atomic<bool> carried_{false};
    const std::thread::id accepted_on_;
    std::atomic<std::uint64_t> sent_{0};
    std::atomic<std::uint64_t> delivered_{0};
    // Gaps told to the loop and not yet handled there; published frames wait behind them.
    std::atomic<unsigned> gaps_pending_{0};
    std::mutex gap_lock_;
    std::vector<std::string> after_gap_;  // under gap_lock_
    std::size_t after_gap_bytes_ = 0;
    /// The loop told the conversation of a gap: what waited behind it goes on.
    void gap_told();
};

}  // namespace cspd
