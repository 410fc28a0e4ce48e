// RESP2, the Redis serialization protocol, with no I/O: a Reader that is fed whatever bytes a
// socket gave, in any pieces, and hands back whole replies; and the writer of commands (arrays
// of bulk strings). Only RESP2's five types (+ - : $ *) are known: RESP3's are refused like any
// unknown byte, so a connection must not ask for it (HELLO 3). Numbers are taken only as Redis
// writes them. Everything a reply announces is checked against Limits before it is believed, so
// a hostile or broken server costs what it sends, not what it announces.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace cspd::resp {

enum class Type : std::uint8_t { simple, error, integer, bulk, null, array };

/// One RESP2 value, as a tree: an array owns its elements.
struct Value {
    Type type = Type::null;
    std::string text;          ///< simple, error and bulk: the bytes (bulk is binary-safe)
    std::int64_t integer = 0;  ///< integer
    std::vector<Value> items;  ///< array (a null array "*-1" is Type::null)

    bool is_null() const { return type == Type::null; }
    bool is_error() const { return type == Type::error; }
    bool operator==(const Value&) const = default;
};

/// What one reply may hold; past any of these the stream is malformed.
struct Limits {
    std::size_t max_bulk = 64 * 1024 * 1024;        ///< a bulk string longer than this is malformed
    std::size_t max_items = 1024 * 1024;            ///< elements of one array
    std::size_t max_total_items = 4 * 1024 * 1024;  ///< elements in one reply, nested ones included
    unsigned max_depth = 8;                         ///< arrays within arrays (a flat array is depth 1)
    std::size_t max_line = 64 * 1024;               ///< a simple/error/integer/length line, CRLF excluded
};

/// Reads replies from a stream of bytes. Each byte is looked at a bounded number of times: a
/// line's scan, an array being filled and a bulk string's announced length are remembered
/// between calls, so the bytes may come in any pieces at the same cost.
class Reader {
public:
    explicit Reader(Limits limits = {});

    /// Appends bytes read from the socket (any cut: a byte at a time must give the same values).
    void feed(std::string_view bytes);

    enum class Result { value, need_more, malformed };
    /// The next whole value from what was fed, moved into `out`; need_more if it is not all here;
    /// malformed (sticky: every later call says so) with why() saying what.
    Result next(Value& out);

    /// Why the stream is malformed; empty while it is not.
    std::string_view why() const;
    std::size_t buffered() const;  ///< bytes fed and not yet consumed

private:
    /// An array whose elements are still coming.
    struct OpenArray {
        Value array;
        std::size_t left = 0;  ///< elements still to come
    };

    Result fail(const char* reason);
    /// The line at the front (type byte, content, CRLF), consumed: its type byte and its content
    /// (a view into the buffer, good until the next feed).
    Result take_line(char& type, std::string_view& content);
    /// Puts a finished value where it belongs: into the innermost open array (closing every
    /// array it completes) or, when it is a whole reply, into `out`; true for the latter.
    bool place(Value&& finished, Value& out);

    Limits limits_;
    std::string buffer_;
    std::size_t at_ = 0;         ///< buffer_'s bytes before this are consumed
    std::size_t line_seen_ = 0;  ///< bytes of the pending line scanned without finding its end
    std::size_t bulk_size_ = 0;  ///< with bulk_pending_: the payload's announced length
    bool bulk_pending_ = false;  ///< a bulk string's length line is consumed, its payload is not
    std::vector<OpenArray> open_;
    std::size_t reply_items_ = 0;  ///< elements announced so far by the reply being read
    const char* failed_ = nullptr;
};

/// Appends one command as RESP2 (an array of bulk strings), e.g. {"XADD", key, ...}.
void append_command(std::string& out, std::span<const std::string_view> args);
void append_command(std::string& out, std::initializer_list<std::string_view> args);

}  // namespace cspd::resp
