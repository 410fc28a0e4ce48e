// A WebSocket conversation on a connection of its own: HTTP/1.1's 101 handed the connection over
// (plain or TLS port). It carries the WebSocketConversation's frames: reads the transport into
// it, writes what it carries, and closes the connection when the conversation is over (the server
// closes TCP first, RFC 6455 §7.1.1).
//
// Reads stop while output waits for the socket (a client that does not read its answers is not
// read either). Lifetime as every Connection's: shared_ptr, held by the transport's waits.
#pragma once

#include "serving/connection.hpp"
#include "serving/protocols/websocket_conversation.hpp"
#include "serving/transport/output_queue.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace cspd {

class WebSocketSession final : public Connection, private WebSocketConversation::Carrier {
public:
    /// The conversation `link` takes `from`'s connection over: `queued` (the 101, and anything
    /// before it) is written first, then `first_bytes` (frames that came with the handshake) are read.
    static std::shared_ptr<WebSocketSession> take_over(Connection& from, std::shared_ptr<WebSocketLink> link,
                                                       OutputQueue queued, std::string_view first_bytes);

    WebSocketSession(Connection& from, OutputQueue queued) noexcept;
    ~WebSocketSession() override;

    void start() override;
    void on_tick(std::uint32_t now) override;
    void on_drain() override;
    void warn_draining() override {}
    void close() override;

private:
    void on_readable() override;
    void on_writable() override;
    void read_more();

    // WebSocketConversation::Carrier
    void carry(std::string&& bytes) override { queued_.append_owned(std::move(bytes)); }
    void push() override;
    void hang_up() override { close(); }
    std::string peer() const override;

    std::shared_ptr<WebSocketConversation> conversation_;
    OutputQueue queued_;
    std::uint32_t last_write_ = 0;
    bool writing_ = false;  // output waits for room: no reads meanwhile
    bool closed_ = false;
};

}  // namespace cspd
