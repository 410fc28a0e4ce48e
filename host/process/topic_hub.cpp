#include "process/topic_hub.hpp"

#include "serving/pubsub/topic_relay.hpp"
#include "stats/shared_stats.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <spdlog/spdlog.h>

#include <unistd.h>

namespace cspd {
namespace asio = boost::asio;

TopicHub::TopicHub(asio::io_context& io, const ClusterOptions& options, unsigned workers, ClusterStats& stats)
    : io_(io), stats_(stats),
      link_(
          io, options,
          [this](std::string_view topic, std::string_view data, bool binary) {
              if (relay_) relay_->forward(topic, data, binary);
          },
          [this](std::string_view topic) {
              if (relay_) relay_->gap(topic);
          }) {
    relay_ = std::make_unique<TopicRelay>(
        ::getpid(), TopicRelay::kMaster, workers, true,
        [this](std::string_view topic, std::string_view data, bool binary) {
            asio::post(io_, [this, topic = std::string(topic), data = std::string(data), binary] {
                link_.publish(topic, data, binary);
                stats_.queue_bytes.store(link_.report().queue_bytes, std::memory_order_relaxed);
            });
        },
        TopicRelay::Gap(),
        [this](pid_t worker, std::string_view topic, bool subscribed) {
            asio::post(io_, [this, worker, topic = std::string(topic), subscribed] { interest(worker, topic, subscribed); });
        });
    stats_.state.store(ClusterStats::down, std::memory_order_relaxed);
    link_.start();
}

TopicHub::~TopicHub() { relay_.reset(); }  // its threads stop before the link goes

void TopicHub::interest(pid_t worker, const std::string& topic, bool subscribed) {
    std::unordered_set<std::string>& mine = by_worker_[worker];
    if (subscribed) {
        if (mine.size() >= kMaxTopicsPerWorker) {
            if (!said_too_many_)
                spdlog::error("cluster: worker pid {} subscribes to more than {} topics: the rest reach its "
                              "subscribers from this host only",
                              worker, kMaxTopicsPerWorker);
            said_too_many_ = true;
            return;
        }
        if (mine.insert(topic).second && holders_[topic]++ == 0) link_.want(topic);
        return;
    }
    if (mine.erase(topic) == 0) return;
    if (mine.empty()) by_worker_.erase(worker);
    const auto held = holders_.find(topic);
    if (held != holders_.end() && --held->second == 0) {
        holders_.erase(held);
        link_.unwant(topic);
    }
}

void TopicHub::process_gone(pid_t pid) {
    const auto it = by_worker_.find(pid);
    if (it == by_worker_.end()) return;
    const std::unordered_set<std::string> topics = std::move(it->second);
    by_worker_.erase(it);
    for (const std::string& topic : topics) {
        const auto held = holders_.find(topic);
        if (held != holders_.end() && --held->second == 0) {
            holders_.erase(held);
            link_.unwant(topic);
        }
    }
}

void TopicHub::report() {
    const ClusterReport now = link_.report();
    stats_.state.store(now.connected ? ClusterStats::connected : ClusterStats::down, std::memory_order_relaxed);
    stats_.published.store(now.published, std::memory_order_relaxed);
    stats_.received.store(now.received, std::memory_order_relaxed);
    stats_.recovered.store(now.recovered, std::memory_order_relaxed);
    stats_.gaps.store(now.gaps, std::memory_order_relaxed);
    stats_.reconnects.store(now.reconnects, std::memory_order_relaxed);
    stats_.refused.store(now.refused, std::memory_order_relaxed);
    stats_.failed.store(now.failed, std::memory_order_relaxed);
    stats_.queue_bytes.store(now.queue_bytes, std::memory_order_relaxed);
    stats_.lag_ms.store(now.lag_ms, std::memory_order_relaxed);
    stats_.topics.store(now.topics, std::memory_order_relaxed);
}

}  // namespace cspd
