// The loop's spare streams (see Http2Stream::make).
#include "serving/protocols/http2_stream.hpp"

namespace cspd {
namespace {
/// Streams let go on this thread (an event loop's), kept for its next ones: the vectors a
/// stream's fields fill keep what they grew to, and a stream costs no allocation of its own.
/// Shared by the loop's sessions, so that an idle connection holds none.
constexpr std::size_t kSpareStreams = 128;
thread_local std::vector<std::unique_ptr<Http2Stream>> spare_streams;
}  // namespace

std::unique_ptr<Http2Stream> Http2Stream::make(std::int32_t id) {
    if (spare_streams.empty()) return std::make_unique<Http2Stream>(id);
    std::unique_ptr<Http2Stream> s = std::move(spare_streams.back());
    spare_streams.pop_back();
    s->id = id;
    return s;
}

void Http2Stream::let_go(std::unique_ptr<Http2Stream> s) {
    s->recycle(0);
    if (spare_streams.size() >= kSpareStreams) return;
    try {
        spare_streams.push_back(std::move(s));
    } catch (const std::bad_alloc&) {
    }
}

}  // namespace cspd
