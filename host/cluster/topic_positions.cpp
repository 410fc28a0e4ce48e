#include "cluster/topic_positions.hpp"

#include <charconv>
#include <utility>

namespace cspd {
namespace {

/// A stream entry id, "MS-SEQ", as its two numbers (0-0 if it is not one).
std::pair<std::uint64_t, std::uint64_t> entry_id(std::string_view id) {
    std::uint64_t ms = 0, seq = 0;
    const std::size_t dash = id.find('-');
    if (dash == std::string_view::npos) return {0, 0};
    std::from_chars(id.data(), id.data() + dash, ms);
    std::from_chars(id.data() + dash + 1, id.data() + id.size(), seq);
    return {ms, seq};
}

/// Whether entry `later` was added after entry `earlier` (ids only grow in one stream).
bool added_after(std::string_view later, std::string_view earlier) { return entry_id(later) > entry_id(earlier); }

}  // namespace

void TopicPositions::add(std::string_view topic) { places_.try_emplace(std::string(topic)); }

void TopicPositions::remove(std::string_view topic) { places_.erase(std::string(topic)); }

void TopicPositions::subscribed(std::string_view topic, Actions& actions) {
    const auto it = places_.find(std::string(topic));
    if (it == places_.end()) return;
    Place& place = it->second;
    if (place.known)
        begin_recovery(topic, place, place.id.empty(), actions);
    else
        actions.ask_start(topic);
}

void TopicPositions::started(std::string_view topic, std::string_view epoch, std::uint64_t offset, Actions& actions) {
    const auto it = places_.find(std::string(topic));
    if (it == places_.end() || it->second.known) return;  // a live message set it already
    Place& place = it->second;
    place.known = true;
    place.epoch = epoch;
    place.offset = offset;
    place.id.clear();
    // The answer may be read before messages the subscription had already brought: those are new.
    place.fresh = true;
    if (std::exchange(place.blind, false)) say_gap(topic, actions);  // subscribed through a cut, place unknown
}

void TopicPositions::live(std::string_view topic, const ClusterMessage& message, Actions& actions) {
    const auto it = places_.find(std::string(topic));
    if (it == places_.end()) return;  // unsubscribed meanwhile
    Place& place = it->second;
    if (place.recovering || !take(topic, place, message, actions)) hold(place, message);
}

bool TopicPositions::take(std::string_view topic, Place& place, const ClusterMessage& message, Actions& actions) {
    if (message.skip) {
        // A hole where publishes never reached Redis: a gap, but for the host that kept them (its
        // subscribers had them). Holes before it are found as any jump: by the next message.
        if (place.known && message.epoch == place.epoch && message.offset <= place.offset) return true;
        if (message.origin != origin_) say_gap(topic, actions);
        place.known = true;
        place.fresh = place.blind = false;
        place.epoch = message.epoch;
        place.offset = message.offset;  // its id stays: a skip has no entry
        return true;
    }
    if (place.known && message.epoch != place.epoch) {
        // A new history that began while this host listened (the last one expired, idle): nothing
        // was missed. Otherwise read it from its start to see what was.
        if (place.cut_since || message.offset != 1) {
            begin_recovery(topic, place, true, actions);
            return false;
        }
    } else if (place.known) {
        if (message.offset <= place.offset && !place.fresh) {
            // Had it (a recovery delivered it first), unless the entry is newer than the one the
            // place names: Redis went back (a snapshot, a failover) and gives old offsets again.
            if (place.id.empty() || !added_after(message.id, place.id)) return true;
            say_gap(topic, actions);
        } else if (message.offset > place.offset + 1) {
            // Missed live: from here on this host did not hear everything, as after a cut.
            place.cut_since = true;
            begin_recovery(topic, place, place.id.empty(), actions);
            return false;
        }
    }
    if (message.origin != origin_) actions.deliver(topic, message);
    advance(place, message);
    return true;
}

void TopicPositions::recovered(std::string_view topic, std::string_view epoch, std::uint64_t last_offset,
                               std::span<const ClusterMessage> entries, bool more, Actions& actions) {
    const auto it = places_.find(std::string(topic));
    if (it == places_.end() || !it->second.recovering) return;  // unsubscribed, or asked before a cut
    Place& place = it->second;
    const std::uint64_t gaps_before = gaps_;
    if (epoch != place.epoch) {
        // Another history: the entry ids asked after are the old one's. Read the new one whole.
        if (!place.asked_from_start) {
            begin_recovery(topic, place, true, actions);
            return;
        }
        // Lost: the new history's beginning (trimmed already), or the old one's end, unless this
        // host listened throughout (it had that end live) or the old one was empty.
        const bool whole = entries.empty() ? last_offset == 0 : entries.front().offset == 1;
        // Held messages of the old history cannot be placed in the new one: gone with it.
        const std::size_t held_before = place.held.size();
        std::erase_if(place.held, [&](const Held& h) { return h.epoch != epoch; });
        place.held_bytes = 0;
        for (const Held& h : place.held) place.held_bytes += h.data.size();
        if (!whole || (place.cut_since && !place.epoch.empty()) || place.held.size() != held_before)
            say_gap(topic, actions);
        place.epoch = epoch;
        place.offset = 0;
        place.id.clear();
        place.known = true;
    } else if (last_offset < place.offset && !place.fresh) {
        // Redis went back (a snapshot, a failover): what this host delivered after its last offset
        // is not there, and the offsets it had are given again. The entries after this host's are new.
        say_gap(topic, actions);
        place.offset = 0;
    } else if (!entries.empty() ? entries.front().offset > place.offset + 1 : last_offset > place.offset && !more) {
        say_gap(topic, actions);  // the history was trimmed past this host's place
    }
    for (const ClusterMessage& entry : entries) {
        if (entry.offset <= place.offset) continue;
        if (entry.origin != origin_) {
            actions.deliver(topic, entry);
            ++recovered_;
        }
        advance(place, entry);
    }
    if (!more && last_offset > place.offset) {
        // Offsets past the last entry, with no entry of their own: publishes that never reached
        // Redis (a host kept them: a skip marker this host missed), or all of them trimmed.
        if (gaps_ == gaps_before) say_gap(topic, actions);
        place.offset = last_offset;
        if (entries.empty()) place.id.clear();  // ids after what was trimmed are unknown
    }
    if (more && !entries.empty()) {
        // After this page's last entry, not the place's id: a page holding only entries this host
        // had (read from the start) leaves that id unchanged, maybe "", which would ask for it again.
        place.asked_from_start = false;
        actions.recover(topic, entries.back().id);
        return;
    }
    place.recovering = false;
    place.cut_since = false;
    release_held(topic, place, actions);
}

void TopicPositions::link_lost() {
    for (auto& [name, place] : places_) {
        if (place.known) place.cut_since = true;
        else place.blind = true;  // subscribed, but where it stood is unknown: what the cut hid is too
        place.recovering = false;  // what was asked died with the connection
        // Held messages are read from the history again; one of an epoch the recovery no longer
        // finds would otherwise start a recovery from the start after every recovery, forever.
        place.held.clear();
        place.held_bytes = 0;
        place.held_overflowed = false;
    }
}

void TopicPositions::advance(Place& place, const ClusterMessage& message) {
    place.known = true;
    place.fresh = false;
    place.blind = false;
    if (place.epoch != message.epoch) place.epoch = message.epoch;
    place.offset = message.offset;
    place.id = message.id;
}

void TopicPositions::begin_recovery(std::string_view topic, Place& place, bool from_start, Actions& actions) {
    place.recovering = true;
    place.asked_from_start = from_start;
    actions.recover(topic, from_start ? std::string_view() : std::string_view(place.id));
}

void TopicPositions::hold(Place& place, const ClusterMessage& message) {
    if (place.held.size() >= kMaxHeld || place.held_bytes + message.data.size() > kMaxHeldBytes) {
        place.held_overflowed = true;  // read from the history instead, once this recovery ends
        return;
    }
    place.held.push_back({std::string(message.epoch), std::string(message.id), std::string(message.origin),
                          std::string(message.data), message.offset, message.binary});
    place.held_bytes += message.data.size();
}

void TopicPositions::release_held(std::string_view topic, Place& place, Actions& actions) {
    if (place.held_overflowed) {
        place.held.clear();
        place.held_bytes = 0;
        place.held_overflowed = false;
        begin_recovery(topic, place, place.id.empty(), actions);
        return;
    }
    while (!place.held.empty()) {
        const Held& next = place.held.front();
        if (!take(topic, place, next.view(), actions)) return;  // it stays first: another recovery began
        place.held_bytes -= next.data.size();
        place.held.pop_front();
    }
}

void TopicPositions::say_gap(std::string_view topic, Actions& actions) {
    ++gaps_;
    actions.gap(topic);
}

}  // namespace cspd
