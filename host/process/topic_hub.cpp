#include "process/topic_hub.hpp"

#include "serving/pubsub/topic_relay.hpp"
#include "stats/shared_stats.hpp"
#include "websocket/utf8_validator.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <spdlog/spdlog.h>

#include <unistd.h>

namespace cspd {
namespace asio = boost::asio;

TopicHub::TopicHub(asio::io_context& io, const ClusterOptions& options, unsigned workers, SharedStats& stats)
    : io_(io), stats_(stats),
      link_(
          io, options,
          [this](std::string_view topic, std::string_view data, bool binary) {
              // Text that is not UTF-8 did not come from a cspd (csp_publish checks it): a client
              // would close on it (1007). Dropped, and said as a gap.
              if (!relay_) return;
              if ((!binary && !ws::Utf8Validator::valid(data)) || !relay_->forward(topic, data, binary)) {
                  if (!binary) spdlog::warn("cluster: a message on topic '{}' that no cspd sent is dropped", topic);
                  relay_->gap(topic);  // the workers could not take it: its subscribers are told
              }
          },
          [this](std::string_view topic) {
              if (relay_) relay_->gap(topic);
          },
          [this](std::uint64_t cookie, std::size_t bytes) { settle(cookie, bytes); }) {
    TopicRelay::Receivers receivers;
    receivers.published = [this](pid_t worker, unsigned slot, std::string_view topic, std::string_view data,
                                 bool binary) {
        const std::uint64_t cookie = std::uint64_t(std::uint32_t(worker)) << 16 | (slot & 0xffff);
        asio::post(io_, [this, cookie, topic = std::string(topic), data = std::string(data), binary] {
            if (!link_.publish(topic, data, binary, cookie)) settle(cookie, data.size());
        });
    };
    receivers.skipped = [this](std::string_view topic) {
        asio::post(io_, [this, topic = std::string(topic)] { link_.skip(topic); });
    };
    receivers.interest = [this](pid_t worker, std::string_view topic, bool subscribed) {
        asio::post(io_, [this, worker, topic = std::string(topic), subscribed] { interest(worker, topic, subscribed); });
    };
    relay_ = std::make_unique<TopicRelay>(::getpid(), TopicRelay::kMaster, workers, true, std::move(receivers));
    stats_.cluster.state.store(ClusterStats::down, std::memory_order_relaxed);
    link_.start();
}

void TopicHub::settle(std::uint64_t cookie, std::size_t bytes) {
    const unsigned slot = unsigned(cookie & 0xffff);
    const pid_t worker = pid_t(cookie >> 16);
    // A worker that died (or was replaced) had its reservations cleared with its slot.
    if (slot < kMaxSlots && stats_.slots[slot].pid.load(std::memory_order_relaxed) == worker)
        stats_.slots[slot].cluster_reserved.fetch_sub(std::int64_t(bytes), std::memory_order_relaxed);
}

TopicHub::~TopicHub() { relay_.reset(); }  // its threads stop before the link goes

void TopicHub::interest(pid_t worker, const std::string& topic, bool subscribed) {
    if (gone_.contains(worker)) return;  // its last words, heard after it was reaped
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
    if (gone_.size() > 4096) gone_.clear();  // pids long reaped; a reused one is a new worker
    gone_.insert(pid);
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
    ClusterStats& cluster = stats_.cluster;
    cluster.state.store(now.connected ? ClusterStats::connected : ClusterStats::down, std::memory_order_relaxed);
    cluster.published.store(now.published, std::memory_order_relaxed);
    cluster.received.store(now.received, std::memory_order_relaxed);
    cluster.recovered.store(now.recovered, std::memory_order_relaxed);
    cluster.gaps.store(now.gaps, std::memory_order_relaxed);
    cluster.reconnects.store(now.reconnects, std::memory_order_relaxed);
    cluster.failed.store(now.failed + now.refused, std::memory_order_relaxed);
    cluster.queue_bytes.store(now.queue_bytes, std::memory_order_relaxed);
    cluster.lag_ms.store(now.lag_ms, std::memory_order_relaxed);
    cluster.topics.store(now.topics, std::memory_order_relaxed);
}

}  // namespace cspd
