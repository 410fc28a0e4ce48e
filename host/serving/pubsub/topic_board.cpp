#include "serving/pubsub/topic_board.hpp"

#include "serving/pubsub/topic_relay.hpp"
#include "serving/exchange/websocket_link.hpp"
#include "websocket/frame_head.hpp"

#include <algorithm>
#include <new>

namespace cspd {

TopicBoard& TopicBoard::instance() {
    static TopicBoard board;
    return board;
}

int TopicBoard::subscribe(std::string_view topic, std::shared_ptr<WebSocketLink> link) noexcept {
    try {
        std::lock_guard lock(mutex_);
        if (link->left_topics) return -1;  // closed: it would never leave again
        std::string name(topic);
        if (std::find(link->topics.begin(), link->topics.end(), name) != link->topics.end()) return 0;
        auto& subscribers = topics_[name];
        const bool first = subscribers.empty();
        subscribers.push_back(link);
        try {
            link->topics.push_back(std::move(name));
        } catch (const std::bad_alloc&) {
            subscribers.pop_back();
            if (first) topics_.erase(std::string(topic));
            throw;
        }
        // Under the lock: the master hears this process's firsts and lasts in the order they came.
        if (first)
            if (TopicRelay* relay = relay_.load(std::memory_order_acquire)) relay->interest(topic, true);
        return 0;
    } catch (const std::bad_alloc&) {
        return -1;
    }
}

int TopicBoard::unsubscribe(std::string_view topic, WebSocketLink& link) noexcept {
    std::lock_guard lock(mutex_);
    const auto mine = std::find(link.topics.begin(), link.topics.end(), topic);
    if (mine == link.topics.end()) return -1;
    link.topics.erase(mine);
    const auto it = topics_.find(std::string(topic));
    if (it == topics_.end()) return -1;
    auto& subscribers = it->second;
    subscribers.erase(std::remove_if(subscribers.begin(), subscribers.end(),
                                     [&](const std::shared_ptr<WebSocketLink>& s) { return s.get() == &link; }),
                      subscribers.end());
    if (subscribers.empty()) {
        topics_.erase(it);
        last_gone(topic);
    }
    return 0;
}

void TopicBoard::leave_all(WebSocketLink& link) noexcept {
    std::vector<std::shared_ptr<WebSocketLink>> released;  // let go outside the lock
    std::lock_guard lock(mutex_);
    for (const std::string& name : link.topics) {
        const auto it = topics_.find(name);
        if (it == topics_.end()) continue;
        auto& subscribers = it->second;
        for (auto s = subscribers.begin(); s != subscribers.end(); ++s)
            if (s->get() == &link) {
                released.push_back(std::move(*s));
                subscribers.erase(s);
                break;
            }
        if (subscribers.empty()) {
            topics_.erase(it);
            last_gone(name);
        }
    }
    link.topics.clear();
    link.left_topics = true;
}

void TopicBoard::last_gone(std::string_view topic) noexcept {
    if (TopicRelay* relay = relay_.load(std::memory_order_acquire)) {
        try {
            relay->interest(topic, false);
        } catch (const std::bad_alloc&) {
            // The master keeps the topic: it costs this host messages it drops, never one it needs.
        }
    }
}

int TopicBoard::publish(std::string_view topic, std::string_view data, bool binary) noexcept {
    if (data.size() > max_message_) return -1;
    bool crosses = true;
    if (TopicRelay* relay = relay_.load(std::memory_order_acquire)) {
        // Past --cluster-queue the message stays on this host: the handler hears CSP_AGAIN, and the
        // other hosts a hole where it would have been (a gap said to their subscribers).
        crosses = relay->reserve_cluster_room(data.size());
        try {
            if (!crosses) relay->skipped(topic);
            if (!relay->forward(topic, data, binary, !crosses)) return -1;
        } catch (const std::bad_alloc&) {
            if (crosses) relay->release_cluster_room(data.size());
            return -1;
        }
    }
    const int here = deliver_here(topic, data, binary);
    return here == 0 && !crosses ? CSP_AGAIN : here;
}

void TopicBoard::gap_here(std::string_view topic) noexcept {
    std::vector<std::shared_ptr<WebSocketLink>> subscribers;
    try {
        std::lock_guard lock(mutex_);
        const auto it = topics_.find(std::string(topic));
        if (it == topics_.end()) return;
        subscribers = it->second;
    } catch (const std::bad_alloc&) {
        return;
    }
    for (auto& link : subscribers) link->topic_gap(topic);
}

int TopicBoard::deliver_here(std::string_view topic, std::string_view data, bool binary) noexcept {
    std::vector<std::shared_ptr<WebSocketLink>> subscribers;
    std::string frame;
    try {
        {
            std::lock_guard lock(mutex_);
            const auto it = topics_.find(std::string(topic));
            if (it == topics_.end()) return 0;
            subscribers = it->second;
        }
        frame.reserve(ws::frame_head_size(data.size()) + data.size());
        ws::append_frame_head(frame, binary ? ws::Opcode::binary : ws::Opcode::text, data.size());
        frame.append(data);
    } catch (const std::bad_alloc&) {
        return -1;
    }
    // Each loop is told once for all its subscribers that have something new, not once each.
    int result = 0;
    std::vector<std::pair<LoopInbox*, std::vector<std::shared_ptr<WebSocketLink>>>> to_wake;
    for (auto& link : subscribers) {
        bool poke = false;
        const int put = link->put_frame(frame, poke);
        if (put == CSP_AGAIN) result = CSP_AGAIN;
        if (put < 0 && !poke) {
            // Closed meanwhile: this copy may be its last reference, let go on its loop (it pins a
            // handler version, whose unload must not run on this thread).
            link->inbox().post([gone = std::move(link)] {});
            continue;
        }
        if (!poke) continue;
        try {
            LoopInbox* inbox = &link->inbox();
            auto loop = std::find_if(to_wake.begin(), to_wake.end(), [&](const auto& w) { return w.first == inbox; });
            if (loop == to_wake.end()) loop = to_wake.insert(to_wake.end(), {inbox, {}});
            loop->second.push_back(link);
        } catch (const std::bad_alloc&) {
            link->wake_later();  // told on its own
        }
    }
    for (auto& [inbox, links] : to_wake)
        inbox->post([links = std::move(links)] {
            for (const auto& link : links) link->wake();
        });
    return result;
}

std::size_t TopicBoard::subscriptions() const {
    std::lock_guard lock(mutex_);
    std::size_t n = 0;
    for (const auto& [name, subscribers] : topics_) n += subscribers.size();
    return n;
}

}  // namespace cspd
