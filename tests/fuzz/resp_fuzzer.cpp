// libFuzzer target: the RESP2 reader (cluster/resp) alone, as it reads what a Redis server sends.
// Oracles: split-invariance -- the same bytes fed whole, in two pieces cut where the input says,
// and in small pieces whose size the input says (one byte at a time among them) give the same
// values, the same verdict, the same reason and the same bytes left over; no value exceeds the
// limits the reader was given (small ones, so that every limit is reached); the values, written
// as Redis writes them, are the bytes the input starts with (numbers are taken only in that form);
// and each value, written back, reads back as itself. Then what the link reads out of such values
// (cluster/topic_wire: a live message, a history entry) is read from each of them: a message it
// takes has an offset above 0, a flag that was t or b, and data that is the payload's tail.
#include "cluster/resp.hpp"
#include "cluster/topic_wire.hpp"

#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

namespace {

using cspd::resp::Reader;
using cspd::resp::Type;
using cspd::resp::Value;

const cspd::resp::Limits kFuzzLimits{
    .max_bulk = 4096, .max_items = 16, .max_total_items = 24, .max_depth = 4, .max_line = 256};

void check(bool ok) {
    if (!ok) std::abort();
}

struct Outcome {
    std::vector<Value> values;
    Reader::Result last = Reader::Result::need_more;
    std::string why;
    std::size_t buffered = 0;
    bool operator==(const Outcome&) const = default;
};

/// Feeds `input` in the pieces `cuts` makes (ascending offsets), taking every value after each
/// feed and stopping at a malformed verdict, as a connection would.
Outcome read_pieces(std::string_view input, const std::vector<std::size_t>& cuts) {
    Reader reader(kFuzzLimits);
    Outcome outcome;
    std::size_t from = 0;
    for (std::size_t i = 0; i <= cuts.size(); ++i) {
        const std::size_t to = i < cuts.size() ? cuts[i] : input.size();
        reader.feed(input.substr(from, to - from));
        from = to;
        Value value;
        while ((outcome.last = reader.next(value)) == Reader::Result::value) outcome.values.push_back(std::move(value));
        if (outcome.last == Reader::Result::malformed) break;
    }
    outcome.why = std::string(reader.why());
    outcome.buffered = reader.buffered();
    return outcome;
}

/// Checks `value` (at `depth` arrays down) against the limits; counts array elements into `items`.
void check_within_limits(const Value& value, unsigned depth, std::size_t& items) {
    switch (value.type) {
    case Type::simple:
    case Type::error:
        check(value.text.size() <= kFuzzLimits.max_line && value.text.find_first_of("\r\n") == std::string::npos);
        break;
    case Type::bulk:
        check(value.text.size() <= kFuzzLimits.max_bulk);
        break;
    case Type::array:
        check(depth < kFuzzLimits.max_depth && value.items.size() <= kFuzzLimits.max_items);
        items += value.items.size();
        check(items <= kFuzzLimits.max_total_items);
        for (const Value& item : value.items) check_within_limits(item, depth + 1, items);
        break;
    case Type::integer:
    case Type::null:
        break;
    }
    check(value.type == Type::array || value.items.empty());
}

/// `value` as RESP2, the way a server would write it.
void write_resp(const Value& value, std::string& out) {
    switch (value.type) {
    case Type::simple: out += "+" + value.text + "\r\n"; break;
    case Type::error: out += "-" + value.text + "\r\n"; break;
    case Type::integer: out += ":" + std::to_string(value.integer) + "\r\n"; break;
    case Type::bulk: out += "$" + std::to_string(value.text.size()) + "\r\n" + value.text + "\r\n"; break;
    case Type::null: out += "$-1\r\n"; break;
    case Type::array:
        out += "*" + std::to_string(value.items.size()) + "\r\n";
        for (const Value& item : value.items) write_resp(item, out);
        break;
    }
}

/// Whether `input` holds `value` at `at` as write_resp writes it (a null also as "*-1"); moves
/// `at` past it.
bool written_at(const Value& value, std::string_view input, std::size_t& at) {
    const auto take = [&input, &at](std::string_view expected) {
        if (input.substr(at, expected.size()) != expected) return false;
        at += expected.size();
        return true;
    };
    if (value.type == Type::null) return take("$-1\r\n") || take("*-1\r\n");
    if (value.type != Type::array) {
        std::string written;
        write_resp(value, written);
        return take(written);
    }
    if (!take("*" + std::to_string(value.items.size()) + "\r\n")) return false;
    for (const Value& item : value.items)
        if (!written_at(item, input, at)) return false;
    return true;
}

/// The link's readings of `value` and of whatever it holds.
void check_topic_readings(const Value& value) {
    cspd::ClusterMessage message;
    if (value.type == Type::bulk && cspd::topic_wire::parse_live(value.text, message)) {
        check(message.offset > 0 && !message.epoch.empty() && !message.id.empty() && !message.origin.empty());
        check(message.data.data() + message.data.size() == value.text.data() + value.text.size());
    }
    if (cspd::topic_wire::parse_entry(value, "e", message)) check(message.offset > 0 && !message.origin.empty());
    for (const Value& item : value.items) check_topic_readings(item);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0 || size > 64 * 1024) return 0;
    const std::string_view input(reinterpret_cast<const char*>(data), size);
    const Outcome whole = read_pieces(input, {});

    const std::size_t cut = (data[0] | (size > 1 ? data[1] << 8 : 0)) % size;
    check(read_pieces(input, {cut}) == whole);
    const std::size_t piece = 1 + data[0] % 8;
    std::vector<std::size_t> cuts;
    for (std::size_t at = piece; at < size; at += piece) cuts.push_back(at);
    check(read_pieces(input, cuts) == whole);

    check(whole.last != Reader::Result::value);
    check((whole.last == Reader::Result::malformed) == !whole.why.empty());
    check(whole.buffered <= size);
    std::size_t at = 0;
    for (const Value& value : whole.values) {
        check(written_at(value, input, at));
        std::size_t items = 0;
        check_within_limits(value, 0, items);
        std::string written;
        write_resp(value, written);
        Reader again(kFuzzLimits);
        again.feed(written);
        Value read_back;
        check(again.next(read_back) == Reader::Result::value && read_back == value && again.buffered() == 0);
        check_topic_readings(value);
    }
    return 0;
}
