// How a topic lives in Redis: its keys and channel, the two Lua scripts (publish: record in the
// topic's stream and publish in one round trip; recover: where the topic stands and what its
// stream holds after an entry), and the reading of what they give back.
//
//   cspd:{TOPIC}:m   a hash: e (the epoch), o (the last offset)
//   cspd:{TOPIC}:p:ORIGIN   that host's last publish sequence on the topic: a publish sent again
//                    after a cut is not recorded twice (a key of its own, so that it expires)
//   cspd:{TOPIC}:s   a stream of entries o (offset), h (origin), f (t or b), d (the data), trimmed
//                    to --cluster-history entries (MAXLEN ~) and --cluster-history-ttl seconds
//   cspd:c:TOPIC     the channel; each message is "EPOCH OFFSET ID ORIGIN FLAG\n" then the data
#pragma once

#include "cluster/resp.hpp"
#include "cluster/topic_positions.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace cspd::topic_wire {

std::string meta_key(std::string_view topic);
std::string stream_key(std::string_view topic);
std::string origin_key(std::string_view topic, std::string_view origin);
std::string channel(std::string_view topic);
/// The topic a channel belongs to; empty if it is not one of ours.
std::string_view topic_of_channel(std::string_view channel);

/// KEYS: meta, stream, origin key. ARGV: channel, history entries, history seconds, origin, sequence, flag
/// (t/b), epoch if the topic has none yet, data. Returns the offset given, or 0 if that origin's
/// sequence was recorded already.
extern const std::string_view kPublishScript;
/// KEYS: meta. ARGV: channel, how many offsets to skip, origin, epoch if the topic has none yet.
/// Publishes a skip marker ("EPOCH OFFSET 0-0 ORIGIN s\n"); returns the offset.
extern const std::string_view kSkipScript;
/// KEYS: meta, stream. ARGV: first id ("-", or "(ID": after ID), count. Returns
/// {epoch or "", last offset or "0", entries as XRANGE gives them}.
extern const std::string_view kRecoverScript;

/// A message (or a skip marker) from the channel; false if it is not one.
bool parse_live(std::string_view payload, ClusterMessage& message);
/// An entry of XRANGE ([id, [field, value, ...]]) with `epoch`; false if it is not one.
bool parse_entry(const resp::Value& entry, std::string_view epoch, ClusterMessage& message);

}  // namespace cspd::topic_wire
