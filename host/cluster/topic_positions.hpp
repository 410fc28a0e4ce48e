// Where this host stands in each topic it subscribes to across hosts: the epoch and offset of the
// last message it delivered, what to ask Redis for after a cut, and when a gap must be said. No I/O:
// the link feeds it what Redis sends and does what it asks (TopicPositions::Actions).
//
// Every message published across hosts has an offset in its topic (1, 2, 3... within one epoch)
// and an entry in the topic's stream. Live messages come over pub/sub; a host that lost the link,
// or sees an offset jump, reads the stream after the last entry it delivered, delivers what it
// missed once and in order, and holds live messages back meanwhile. Where the stream no longer
// reaches back (trimmed, or Redis lost it: a new epoch), the topic's subscribers are told (a gap):
// never silence. A host's own messages were delivered here when published: they move its place,
// and are not delivered again.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>

namespace cspd {

/// One message as Redis gives it, live or from a topic's history.
struct ClusterMessage {
    std::string_view epoch;   ///< the topic's history's; it changes when that history was lost
    std::uint64_t offset = 0;  ///< 1, 2, 3... within an epoch
    std::string_view id;      ///< its stream entry's id ("1700000000000-0")
    std::string_view origin;  ///< the host that published it
    bool binary = false;
    std::string_view data;
    /// Not a message: the publishes of `origin` up to `offset` did not reach Redis (a host kept
    /// them, its queue full, or Redis refused them): a hole, said as a gap elsewhere.
    bool skip = false;
};

class TopicPositions {
public:
    /// What the link does for a topic, asked while an event is taken.
    class Actions {
    public:
        /// To this host's subscribers.
        virtual void deliver(std::string_view topic, const ClusterMessage& message) = 0;
        /// Messages were lost for good: this host's subscribers must be told.
        virtual void gap(std::string_view topic) = 0;
        /// Ask for the topic's history after entry `after_id` ("": all of it): recovered() follows.
        virtual void recover(std::string_view topic, std::string_view after_id) = 0;
        /// Ask where the topic's history stands now: started() follows.
        virtual void ask_start(std::string_view topic) = 0;

    protected:
        ~Actions() = default;
    };

    /// Live messages held back while a topic recovers, at most (past it they are dropped, and the
    /// topic reads its history again when the recovery ends).
    static constexpr std::size_t kMaxHeld = 10000;
    static constexpr std::size_t kMaxHeldBytes = 16 * 1024 * 1024;

    /// `origin`: this host's name in what it publishes.
    explicit TopicPositions(std::string origin) : origin_(std::move(origin)) {}

    /// This host subscribes to `topic` (its first subscriber came): it has no place yet.
    void add(std::string_view topic);
    /// Its last subscriber went: its place is forgotten.
    void remove(std::string_view topic);
    bool has(std::string_view topic) const { return places_.contains(std::string(topic)); }
    std::size_t size() const { return places_.size(); }

    /// Redis confirmed the subscription (first, or again after a cut): recover from the place this
    /// host had, or learn where the topic stands.
    void subscribed(std::string_view topic, Actions& actions);
    /// Where the topic stood (ask_start's answer): the place to begin from, unless a live message
    /// set one already. `epoch` empty: nothing was ever published (or Redis kept nothing). A live
    /// message at or below it that comes before any other is still delivered: the subscription
    /// brought it, so it was published after the subscription took effect. A topic whose place was
    /// unknown at a cut hears of a gap here.
    void started(std::string_view topic, std::string_view epoch, std::uint64_t offset, Actions& actions);
    /// A message from the subscription.
    void live(std::string_view topic, const ClusterMessage& message, Actions& actions);
    /// recover()'s answer: the topic's epoch and last offset now, and `entries` after the entry
    /// asked for, oldest first; `more`: there are more after the last of them.
    void recovered(std::string_view topic, std::string_view epoch, std::uint64_t last_offset,
                   std::span<const ClusterMessage> entries, bool more, Actions& actions);
    /// The link to Redis broke: every topic recovers once it is subscribed again, and a new epoch
    /// seen after it means its history was lost.
    void link_lost();

    /// Messages delivered from history and gaps said, since the start.
    std::uint64_t recovered_count() const { return recovered_; }
    std::uint64_t gap_count() const { return gaps_; }

private:
    struct Held {
        std::string epoch, id, origin, data;
        std::uint64_t offset;
        bool binary;
        ClusterMessage view() const { return {epoch, offset, id, origin, binary, data}; }
    };
    struct Place {
        bool known = false;          // epoch/offset say where this host is
        std::string epoch;
        std::uint64_t offset = 0;
        std::string id;              // of the last entry delivered ("": unknown, read from the start)
        bool recovering = false;
        bool asked_from_start = false;
        bool cut_since = false;      // the link broke since the place was set
        bool fresh = false;          // set by started(), nothing delivered since
        bool blind = false;          // the link broke while the place was unknown
        std::deque<Held> held;       // live messages that came while recovering
        std::size_t held_bytes = 0;
        bool held_overflowed = false;
    };

    void advance(Place& place, const ClusterMessage& message);
    /// Delivers `message` (unless this host sent it) and moves the place on; false when it cannot
    /// be taken yet (a recovery began: the caller holds it).
    bool take(std::string_view topic, Place& place, const ClusterMessage& message, Actions& actions);
    void begin_recovery(std::string_view topic, Place& place, bool from_start, Actions& actions);
    void hold(Place& place, const ClusterMessage& message);
    void release_held(std::string_view topic, Place& place, Actions& actions);
    void say_gap(std::string_view topic, Actions& actions);

    std::string origin_;
    std::unordered_map<std::string, Place> places_;
    std::uint64_t recovered_ = 0;
    std::uint64_t gaps_ = 0;
};

}  // namespace cspd
