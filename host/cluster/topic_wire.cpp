#include "cluster/topic_wire.hpp"

#include <charconv>

namespace cspd::topic_wire {
namespace {

constexpr std::string_view kChannelPrefix = "cspd:c:";

bool parse_offset(std::string_view text, std::uint64_t& offset) {
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), offset);
    return error == std::errc() && end == text.data() + text.size() && offset > 0;
}

/// The next space-ended word of `text`, taken off it.
bool next_word(std::string_view& text, std::string_view& word) {
    const std::size_t space = text.find(' ');
    if (space == std::string_view::npos || space == 0) return false;
    word = text.substr(0, space);
    text.remove_prefix(space + 1);
    return true;
}

}  // namespace

std::string meta_key(std::string_view topic) { return "cspd:{" + std::string(topic) + "}:m"; }
std::string stream_key(std::string_view topic) { return "cspd:{" + std::string(topic) + "}:s"; }
std::string origin_key(std::string_view topic, std::string_view origin) {
    return "cspd:{" + std::string(topic) + "}:p:" + std::string(origin);
}
std::string channel(std::string_view topic) { return std::string(kChannelPrefix) + std::string(topic); }

std::string_view topic_of_channel(std::string_view name) {
    return name.starts_with(kChannelPrefix) ? name.substr(kChannelPrefix.size()) : std::string_view();
}

const std::string_view kPublishScript = R"lua(
local meta, stream, sent_by = KEYS[1], KEYS[2], KEYS[3]
local done = redis.call('GET', sent_by)
if done and tonumber(done) >= tonumber(ARGV[5]) then return 0 end
local epoch = redis.call('HGET', meta, 'e')
if not epoch then
  epoch = ARGV[7]
  redis.call('HSET', meta, 'e', epoch)
end
local offset = redis.call('HINCRBY', meta, 'o', 1)
local ttl = tonumber(ARGV[3])
redis.call('SET', sent_by, ARGV[5], 'EX', math.max(ttl * 2, 86400))
local id = redis.call('XADD', stream, 'MAXLEN', '~', ARGV[2], '*', 'o', offset, 'h', ARGV[4], 'f', ARGV[6], 'd', ARGV[8])
local now = redis.call('TIME')
redis.call('XTRIM', stream, 'MINID', string.format('%.0f', (tonumber(now[1]) - ttl) * 1000))
redis.call('EXPIRE', stream, ttl)
redis.call('EXPIRE', meta, math.max(ttl * 2, 86400))
redis.call('PUBLISH', ARGV[1], epoch .. ' ' .. offset .. ' ' .. id .. ' ' .. ARGV[4] .. ' ' .. ARGV[6] .. '\n' .. ARGV[8])
return offset
)lua";

const std::string_view kSkipScript = R"lua(
local epoch = redis.call('HGET', KEYS[1], 'e')
if not epoch then
  epoch = ARGV[4]
  redis.call('HSET', KEYS[1], 'e', epoch)
end
local offset = redis.call('HINCRBY', KEYS[1], 'o', ARGV[2])
redis.call('PUBLISH', ARGV[1], epoch .. ' ' .. offset .. ' 0-0 ' .. ARGV[3] .. ' s\n')
return offset
)lua";

const std::string_view kRecoverScript = R"lua(
local m = redis.call('HMGET', KEYS[1], 'e', 'o')
local entries = redis.call('XRANGE', KEYS[2], ARGV[1], '+', 'COUNT', ARGV[2])
return {m[1] or '', m[2] or '0', entries}
)lua";

bool parse_live(std::string_view payload, ClusterMessage& message) {
    const std::size_t line_end = payload.find('\n');
    if (line_end == std::string_view::npos) return false;
    std::string_view head = payload.substr(0, line_end + 1);
    head.remove_suffix(1);
    std::string_view offset, flag;
    if (!next_word(head, message.epoch) || !next_word(head, offset) || !next_word(head, message.id) ||
        !next_word(head, message.origin))
        return false;
    flag = head;
    if (!parse_offset(offset, message.offset) || (flag != "t" && flag != "b" && flag != "s")) return false;
    message.binary = flag == "b";
    message.skip = flag == "s";
    message.data = payload.substr(line_end + 1);
    return true;
}

bool parse_entry(const resp::Value& entry, std::string_view epoch, ClusterMessage& message) {
    if (entry.type != resp::Type::array || entry.items.size() != 2 || entry.items[0].type != resp::Type::bulk ||
        entry.items[1].type != resp::Type::array)
        return false;
    message = {};
    message.epoch = epoch;
    message.id = entry.items[0].text;
    const std::vector<resp::Value>& fields = entry.items[1].items;
    bool has_offset = false, has_data = false, has_flag = false;
    for (std::size_t i = 0; i + 1 < fields.size(); i += 2) {
        if (fields[i].type != resp::Type::bulk || fields[i + 1].type != resp::Type::bulk) return false;
        const std::string_view name = fields[i].text, value = fields[i + 1].text;
        if (name == "o") {
            has_offset = parse_offset(value, message.offset);
        } else if (name == "h") {
            message.origin = value;
        } else if (name == "f") {
            has_flag = value == "t" || value == "b";
            message.binary = value == "b";
        } else if (name == "d") {
            message.data = value;
            has_data = true;
        }
    }
    return has_offset && has_data && has_flag && !message.origin.empty();
}

}  // namespace cspd::topic_wire
