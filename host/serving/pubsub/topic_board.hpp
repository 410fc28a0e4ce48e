// The worker's topics: which WebSocket conversations are subscribed to which names, and
// csp_publish, which frames a message once and puts it in every subscriber's outbox, in the order
// one publisher published. Any thread, under one lock; a publish copies the subscriber list and
// sends outside it, so one slow topic does not hold the others.
//
// One per process (the handler layer reaches it as its Publisher); a TopicRelay carries its
// publishes to the other workers and theirs to it, and with --cluster to and from other hosts
// through the master, which hears each topic's first subscriber and last one here.
#pragma once

#include "handler/websocket_channel.hpp"

#include <atomic>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace cspd {

class TopicRelay;
class WebSocketLink;

class TopicBoard final : public Publisher {
public:
    static TopicBoard& instance();

    /// 0, or -1 (no memory).
    int subscribe(std::string_view topic, std::shared_ptr<WebSocketLink> link) noexcept;
    /// 0, or -1 (it was not subscribed).
    int unsubscribe(std::string_view topic, WebSocketLink& link) noexcept;
    /// The conversation closed: it leaves every topic.
    void leave_all(WebSocketLink& link) noexcept;

    /// Here, and through the relay (if any) to the other workers.
    int publish(std::string_view topic, std::string_view data, bool binary) noexcept override;
    /// To this worker's subscribers only (what the relay brings from the others).
    int deliver_here(std::string_view topic, std::string_view data, bool binary) noexcept;
    /// Messages of `topic` were lost for good across hosts (the master says): each of this
    /// worker's subscribers is told (on_topic_gap, or closed with 1012).
    void gap_here(std::string_view topic) noexcept;
    /// What carries publishes to the other workers (null: none; set before serving, cleared after).
    void set_relay(TopicRelay* relay) { relay_.store(relay, std::memory_order_release); }

    /// Messages longer than this are refused (--ws-max-message).
    void set_max_message(std::size_t bytes) { max_message_ = bytes; }
    /// Subscriptions held now, over all topics.
    std::size_t subscriptions() const;

private:
    /// A topic's last subscriber here went (under the lock): the master hears it (--cluster).
    void last_gone(std::string_view topic) noexcept;

    mutable std::mutex mutex_;
    std::unordered_map<std::string, std::vector<std::shared_ptr<WebSocketLink>>> topics_;
    std::size_t max_message_ = 1024 * 1024;
    std::atomic<TopicRelay*> relay_{nullptr};
};

}  // namespace cspd
