#include "cluster/resp.hpp"

#include <algorithm>
#include <charconv>
#include <system_error>
#include <utility>

namespace cspd::resp {
namespace {

// Consumed bytes are erased from the front once there are this many and they are at least half
// the buffer: each byte is moved at most about once, and a small reply costs no move at all.
constexpr std::size_t kRespCompactAfter = 64 * 1024;
// A buffer emptied after a large reply gives its memory back rather than keep it for an idle link.
constexpr std::size_t kRespKeepCapacity = 256 * 1024;
// The shortest encoding of an element ("+\r\n"): an array reserves no more elements than the
// bytes already here could hold, whatever it announces.
constexpr std::size_t kRespSmallestElement = 3;

bool resp_type_known(char type) {
    return type == '+' || type == '-' || type == ':' || type == '$' || type == '*';
}

/// A number exactly as Redis writes one (its string2ll is as strict): "0", or an optional '-' and
/// digits without a leading zero, within 64 bits. "-0", "007", "+5", " 5" and "" are refused.
bool parse_resp_integer(std::string_view text, std::int64_t& value) {
    const std::size_t first = text.starts_with('-') ? 1 : 0;
    if (text.size() <= first || text[first] < '0' || text[first] > '9') return false;
    if (text[first] == '0' && text.size() > 1) return false;
    const char* end = text.data() + text.size();
    const auto [stop, error] = std::from_chars(text.data(), end, value);
    return error == std::errc() && stop == end;
}

enum class RespLength { ok, bad, below_minus_one };

/// A bulk or array length: "-1" (null) or a number as above that is not negative.
RespLength parse_resp_length(std::string_view text, std::int64_t& length) {
    if (!parse_resp_integer(text, length)) return RespLength::bad;
    return length < -1 ? RespLength::below_minus_one : RespLength::ok;
}

void append_resp_header(std::string& out, char type, std::size_t count) {
    char digits[24];
    const auto written = std::to_chars(digits, digits + sizeof digits, count);
    out += type;
    out.append(digits, written.ptr);
    out += "\r\n";
}

}  // namespace

Reader::Reader(Limits limits) : limits_(limits) {}

void Reader::feed(std::string_view bytes) {
    if (failed_) return;  // nothing more will be read: keep none of it
    if (at_ == buffer_.size()) {
        if (buffer_.capacity() > kRespKeepCapacity) std::string().swap(buffer_);
        else buffer_.clear();
        at_ = 0;
    } else if (at_ >= kRespCompactAfter && at_ >= buffer_.size() / 2) {
        buffer_.erase(0, at_);
        at_ = 0;
    }
    buffer_.append(bytes);
}

std::string_view Reader::why() const { return failed_ ? std::string_view(failed_) : std::string_view(); }

std::size_t Reader::buffered() const { return buffer_.size() - at_; }

Reader::Result Reader::fail(const char* reason) {
    failed_ = reason;
    std::string().swap(buffer_);
    at_ = 0;
    open_.clear();
    bulk_pending_ = false;
    return Result::malformed;
}

Reader::Result Reader::take_line(char& type, std::string_view& content) {
    if (at_ == buffer_.size()) return Result::need_more;
    type = buffer_[at_];
    if (!resp_type_known(type)) return fail("unknown type byte");
    // The CR may come at most max_line bytes after the type byte: a longer line is refused as
    // soon as its first max_line + 1 bytes are here, whatever follows them.
    const std::size_t start = at_ + 1;
    const bool window_full = buffer_.size() - start > limits_.max_line;
    const std::size_t scan_end = window_full ? start + limits_.max_line + 1 : buffer_.size();
    const std::string_view window(buffer_.data() + start + line_seen_, scan_end - start - line_seen_);
    const std::size_t found = window.find_first_of("\r\n");
    if (found == std::string_view::npos) {
        line_seen_ = scan_end - start;
        return window_full ? fail("line longer than the limit") : Result::need_more;
    }
    const std::size_t end = start + line_seen_ + found;
    if (buffer_[end] == '\n') return fail("line feed without carriage return");
    if (end + 1 == buffer_.size()) {
        line_seen_ = end - start;  // the CR is looked at again with the byte after it
        return Result::need_more;
    }
    if (buffer_[end + 1] != '\n') return fail("carriage return not followed by line feed");
    content = std::string_view(buffer_.data() + start, end - start);
    at_ = end + 2;
    line_seen_ = 0;
    return Result::value;
}

bool Reader::place(Value&& finished, Value& out) {
    Value done = std::move(finished);
    while (!open_.empty()) {
        OpenArray& innermost = open_.back();
        innermost.array.items.push_back(std::move(done));
        if (--innermost.left > 0) return false;
        done = std::move(innermost.array);
        open_.pop_back();
    }
    out = std::move(done);
    reply_items_ = 0;
    return true;
}

Reader::Result Reader::next(Value& out) {
    if (failed_) return Result::malformed;
    for (;;) {
        if (bulk_pending_) {
            // Known length: nothing is parsed again until all of it is here.
            if (buffer_.size() - at_ < bulk_size_ + 2) return Result::need_more;
            const char* payload = buffer_.data() + at_;
            if (payload[bulk_size_] != '\r' || payload[bulk_size_ + 1] != '\n')
                return fail("bulk string not followed by CRLF");
            Value bulk;
            bulk.type = Type::bulk;
            bulk.text.assign(payload, bulk_size_);
            at_ += bulk_size_ + 2;
            bulk_pending_ = false;
            if (place(std::move(bulk), out)) return Result::value;
            continue;
        }
        char type = 0;
        std::string_view content;
        if (const Result line = take_line(type, content); line != Result::value) return line;
        Value finished;
        switch (type) {
        case '+':
        case '-':
            finished.type = type == '+' ? Type::simple : Type::error;
            finished.text.assign(content);
            break;
        case ':':
            if (!parse_resp_integer(content, finished.integer)) return fail("integer not a number or out of range");
            finished.type = Type::integer;
            break;
        default: {  // '$' or '*', the only other types take_line lets through
            std::int64_t length = 0;
            switch (parse_resp_length(content, length)) {
            case RespLength::bad: return fail("length not -1 or a decimal number in range");
            case RespLength::below_minus_one: return fail("length below -1");
            case RespLength::ok: break;
            }
            if (length == -1) break;  // null bulk or null array: finished is null already
            const auto count = static_cast<std::uint64_t>(length);
            if (type == '$') {
                if (count > limits_.max_bulk) return fail("bulk string longer than the limit");
                bulk_size_ = static_cast<std::size_t>(count);
                bulk_pending_ = true;
                continue;
            }
            if (count > limits_.max_items) return fail("array longer than the limit");
            if (open_.size() >= limits_.max_depth) return fail("arrays nested deeper than the limit");
            if (count > limits_.max_total_items - reply_items_) return fail("reply with more elements than the limit");
            finished.type = Type::array;
            if (count == 0) break;
            reply_items_ += static_cast<std::size_t>(count);
            OpenArray opened{std::move(finished), static_cast<std::size_t>(count)};
            opened.array.items.reserve(std::min(opened.left, buffered() / kRespSmallestElement));
            open_.push_back(std::move(opened));
            continue;
        }
        }
        if (place(std::move(finished), out)) return Result::value;
    }
}

void append_command(std::string& out, std::span<const std::string_view> args) {
    std::size_t size = 16;
    for (const std::string_view arg : args) size += arg.size() + 16;
    out.reserve(out.size() + size);
    append_resp_header(out, '*', args.size());
    for (const std::string_view arg : args) {
        append_resp_header(out, '$', arg.size());
        out.append(arg);
        out += "\r\n";
    }
}

void append_command(std::string& out, std::initializer_list<std::string_view> args) {
    append_command(out, std::span<const std::string_view>(args.begin(), args.size()));
}

}  // namespace cspd::resp
