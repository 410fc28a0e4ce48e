#include "handler/sdk_websocket.hpp"

#include "handler/sdk_bridge.hpp"
#include "websocket/frame_head.hpp"
#include "websocket/handshake.hpp"
#include "websocket/utf8_validator.hpp"

#include <atomic>
#include <cstddef>
#include <cstring>
#include <new>
#include <string_view>
#include <utility>

namespace cspd {
namespace {

std::atomic<Publisher*> g_publisher{nullptr};

bool is_topic(const char* topic, std::size_t size) { return topic && size > 0 && size <= WebSocketApi::kMaxTopic; }

/// What a message may carry: any bytes when binary, valid UTF-8 when text.
bool is_message(const void* data, std::size_t size, int binary) {
    if (!data && size) return false;
    return binary || ws::Utf8Validator::valid({static_cast<const char*>(data), size});
}

}  // namespace

Publisher* Publisher::current() noexcept { return g_publisher.load(std::memory_order_acquire); }
void Publisher::set_current(Publisher* publisher) noexcept { g_publisher.store(publisher, std::memory_order_release); }

csp_ws* WebSocketApi::accept(const csp_request* req, csp_reply* reply, const csp_ws_callbacks* callbacks,
                             const char* protocol, size_t protocol_size) noexcept {
    // 2.4's struct ends before on_topic_gap: that much at least.
    if (!req || !reply || !callbacks || callbacks->size < offsetof(csp_ws_callbacks, on_topic_gap) ||
        (!protocol && protocol_size))
        return nullptr;
    const HandlerRequestView& view = HandlerRequestView::of(req);
    HandlerReply& answer = *static_cast<HandlerReply*>(reply->host);
    const HttpRequest& request = view.request();
    if (ws::check_handshake(request) != ws::Handshake::valid) return nullptr;
    const std::string_view chosen(protocol ? protocol : "", protocol_size);
    if (!chosen.empty() && !ws::offers_protocol(request, chosen)) return nullptr;
    WebSocketChannel::Source* source = std::exchange(answer.websocket_source_, nullptr);  // once per call
    if (!source) return nullptr;
    try {
        answer.websocket_protocol_.assign(chosen);
    } catch (const std::bad_alloc&) {
        return nullptr;
    }
    WebSocketChannel* channel = source->accept_websocket(*callbacks);
    if (!channel) return nullptr;
    answer.pending_source_ = nullptr;  // the exchange is a conversation now: no deferring it too,
    answer.pending_ = nullptr;         // nor streaming a blocking call's reply
    answer.websocket_ = channel;
    return channel->handle();
}

int WebSocketApi::refuse(const csp_request* req, csp_reply* reply) noexcept {
    if (!req || !reply) return 500;
    const HttpRequest& request = HandlerRequestView::of(req).request();
    const ws::Handshake verdict = ws::check_handshake(request);
    int status = 426;
    const char* header_name = nullptr;
    const char* header_value = nullptr;
    const char* text = "";
    switch (verdict) {
    case ws::Handshake::not_websocket:
        header_name = "Upgrade", header_value = "websocket";
        text = "This resource speaks WebSocket (RFC 6455): ask with Upgrade: websocket.\n";
        break;
    case ws::Handshake::bad_version:
        header_name = "Sec-WebSocket-Version", header_value = "13";
        text = "This server speaks WebSocket version 13 only.\n";
        break;
    case ws::Handshake::malformed:
        status = 400;
        text = "Not a valid WebSocket opening handshake (RFC 6455 section 4.1).\n";
        break;
    case ws::Handshake::valid:
        status = 503;
        text = "This WebSocket cannot be accepted now.\n";
        break;
    }
    const csp_host_api& api = *reply->api;
    api.reply_set_content_type(reply, "text/plain; charset=utf-8", std::strlen("text/plain; charset=utf-8"));
    if (header_name)
        api.reply_add_header(reply, header_name, std::strlen(header_name), header_value, std::strlen(header_value));
    reply->size = 0;
    csp_reply_puts(reply, text);
    return status;
}

int WebSocketApi::send(csp_ws* ws, const void* data, size_t size, int binary) noexcept {
    if (!ws || !is_message(data, size, binary)) return -1;
    return WebSocketChannel::of(ws).send({static_cast<const char*>(data), size}, binary != 0);
}

int WebSocketApi::close(csp_ws* ws, unsigned code, const char* reason, size_t reason_size) noexcept {
    if (!ws || !ws::is_sendable_close_code(code) || (!reason && reason_size)) return -1;
    const std::string_view why(reason ? reason : "", reason_size);
    if (why.size() > ws::kMaxControlPayload - 2 || !ws::Utf8Validator::valid(why)) return -1;
    return WebSocketChannel::of(ws).close(code, why);
}

int WebSocketApi::subscribe(csp_ws* ws, const char* topic, size_t topic_size) noexcept {
    if (!ws || !is_topic(topic, topic_size)) return -1;
    return WebSocketChannel::of(ws).subscribe({topic, topic_size});
}

int WebSocketApi::unsubscribe(csp_ws* ws, const char* topic, size_t topic_size) noexcept {
    if (!ws || !is_topic(topic, topic_size)) return -1;
    return WebSocketChannel::of(ws).unsubscribe({topic, topic_size});
}

int WebSocketApi::publish(const char* topic, size_t topic_size, const void* data, size_t size, int binary) noexcept {
    if (!is_topic(topic, topic_size) || !is_message(data, size, binary)) return -1;
    Publisher* publisher = Publisher::current();
    if (!publisher) return -1;
    return publisher->publish({topic, topic_size}, {static_cast<const char*>(data), size}, binary != 0);
}

}  // namespace cspd
