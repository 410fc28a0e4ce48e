#include "serving/exchange/stream_outbox.hpp"

#include <csp/csp.h>

#include <charconv>
#include <new>

namespace cspd {
namespace {

constexpr std::string_view kLastChunk = "0\r\n\r\n";

/// Calls `line` for each line of `text`: SSE ends lines at CRLF, LF or CR.
template <class Line>
void for_each_line(std::string_view text, Line line) {
    for (;;) {
        const std::size_t end = text.find_first_of("\r\n");
        line(text.substr(0, end));
        if (end == std::string_view::npos) return;
        text.remove_prefix(end + (text.compare(end, 2, "\r\n") == 0 ? 2 : 1));
    }
}

}  // namespace

StreamOutbox::StreamOutbox(Framing framing, ContentCoding coding) : framing_(framing) {
    if (framing == Framing::none || coding == ContentCoding::identity) return;  // HEAD: no body to code
    encoder_ = BodyEncoder::make(coding);
    if (!encoder_) throw std::bad_alloc();
    totals_.coding = coding;
}

void StreamOutbox::drop_coder() {
    encoder_.reset();
    std::string().swap(plain_);
    std::string().swap(coded_);
}

StreamOutbox::Coded StreamOutbox::coded() {
    std::lock_guard lock(mutex_);
    return totals_;
}

StreamOutbox::~StreamOutbox() = default;

void StreamOutbox::append_framed(std::string_view piece) {
    if (piece.empty()) return;  // a chunk of size 0 would end the body
    if (framing_ == Framing::chunked) {
        char digits[20];
        const auto [end, ec] = std::to_chars(digits, digits + sizeof digits, piece.size(), 16);
        bytes_.append(digits, end).append("\r\n").append(piece).append("\r\n");
    } else {
        bytes_.append(piece);
    }
}

template <class Append>
StreamOutbox::Result StreamOutbox::put(std::size_t size, bool may_wait, Append append) {
    std::unique_lock lock(mutex_);
    if (may_wait) room_.wait(lock, [&] { return closed_ || ended_ || held() < kHighWater; });
    if (closed_ || ended_) return {-1};
    if (framing_ == Framing::none || size == 0) return {0};  // HEAD: the body is not sent
    if (!may_wait && held() + size > kHardLimit && held() > 0) return {-1, false, true};
    if (encoder_) {
        plain_.clear();
        append(plain_);
        coded_.clear();
        if (!encoder_->encode(plain_, BodyEncoder::Flush::sync, coded_)) {
            // The coder may have taken bytes it never gave out: nothing more can be decoded.
            closed_ = true;
            drop_coder();
            room_.notify_all();
            return {-1, false, false, true};
        }
        append_framed(coded_);
        totals_.bytes_in += plain_.size();
        totals_.bytes_out += coded_.size();
        constexpr std::size_t kKeep = 64 * 1024;  // a stream of small events keeps small buffers
        if (plain_.capacity() > kKeep) std::string().swap(plain_);
        if (coded_.capacity() > kKeep) std::string().swap(coded_);
    } else if (framing_ == Framing::chunked) {
        char digits[20];
        const auto [end, ec] = std::to_chars(digits, digits + sizeof digits, size, 16);
        bytes_.append(digits, end).append("\r\n");
        append(bytes_);
        bytes_.append("\r\n");
    } else {
        append(bytes_);
    }
    Result result{0};
    if (!poke_pending_) poke_pending_ = result.poke = true;
    if (!may_wait && held() > kHighWater) {
        told_again_ = true;
        result.code = CSP_AGAIN;
    }
    return result;
}

StreamOutbox::Result StreamOutbox::write(std::string_view bytes, bool may_wait) {
    return put(bytes.size(), may_wait, [bytes](std::string& out) { out.append(bytes); });
}

StreamOutbox::Result StreamOutbox::write_parts(std::string_view head, std::string_view body, bool may_wait) {
    return put(head.size() + body.size(), may_wait, [head, body](std::string& out) { out.append(head).append(body); });
}

StreamOutbox::Result StreamOutbox::event(std::string_view event, std::string_view data, bool may_wait) {
    std::size_t size = event.empty() ? 0 : 7 + event.size() + 1;  // "event: " NAME "\n"
    for_each_line(data, [&](std::string_view line) { size += 6 + line.size() + 1; });  // "data: " LINE "\n"
    size += 1;  // the blank line that ends the event
    return put(size, may_wait, [event, data](std::string& out) {
        if (!event.empty()) out.append("event: ").append(event).append("\n");
        for_each_line(data, [&](std::string_view line) { out.append("data: ").append(line).append("\n"); });
        out.append("\n");
    });
}

StreamOutbox::Result StreamOutbox::end() {
    std::lock_guard lock(mutex_);
    if (closed_ || ended_) return {-1};
    ended_ = true;
    room_.notify_all();  // a second writer waiting for room gives up
    if (encoder_) {
        coded_.clear();
        const bool finished = encoder_->encode({}, BodyEncoder::Flush::finish, coded_);
        if (finished) {
            append_framed(coded_);
            totals_.bytes_out += coded_.size();
        }
        drop_coder();  // its memory goes now, not when the last bytes have been sent
        if (!finished) {  // cut short: no last chunk says it is whole
            closed_ = true;
            Result result{-1, false, false, true};
            if (!poke_pending_) poke_pending_ = result.poke = true;
            return result;
        }
    }
    if (framing_ == Framing::chunked) bytes_.append(kLastChunk);
    Result result{0};
    if (!poke_pending_) poke_pending_ = result.poke = true;
    return result;
}

StreamOutbox::Result StreamOutbox::end_with(std::string_view last) {
    std::lock_guard lock(mutex_);
    if (closed_ || ended_) return {-1};
    ended_ = true;
    room_.notify_all();
    bytes_.append(last);
    Result result{0};
    if (!poke_pending_) poke_pending_ = result.poke = true;
    return result;
}

std::string StreamOutbox::take(bool* ended) {
    std::lock_guard lock(mutex_);
    if (ended) *ended = ended_;
    poke_pending_ = false;
    std::string taken;
    taken.swap(bytes_);
    // Counted as still in the socket until the loop says what the socket took (set_backlog,
    // which always follows): a writer must not find room in between and overshoot the mark.
    backlog_ += taken.size();
    return taken;
}

bool StreamOutbox::set_backlog(std::size_t backlog) {
    std::lock_guard lock(mutex_);
    backlog_ = backlog;
    if (held() < kHighWater) room_.notify_all();
    if (!told_again_ || held() > kHighWater / 2 || closed_ || ended_) return false;
    told_again_ = false;
    return true;
}

void StreamOutbox::close() {
    std::lock_guard lock(mutex_);
    closed_ = true;
    drop_coder();  // nobody writes through it any more
    room_.notify_all();
}

}  // namespace cspd
