// libFuzzer target: the HTTP/1 parser alone (no routing, no handlers, no sockets). The oracle is
// split-invariance: the same bytes fed whole, in two pieces cut where the input says, and one byte
// at a time must give the same requests (method, target, version, headers, body, keep-alive) and
// the same verdict; and no request may exceed the limits the parser was given. Bodies over 64
// bytes take the spill path (a temporary file), so it is fuzzed too.
#include "http/parser.hpp"

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

namespace {

constexpr std::size_t kMaxHead = 2048, kMaxBody = 16 * 1024, kInMemory = 64;

/// What a request said, copied (the parser's views last only until the next feed).
struct Seen {
    std::string method, target, body;
    std::vector<std::pair<std::string, std::string>> headers;
    int major = 0, minor = 0;
    bool keep_alive = false, head = false;
    bool operator==(const Seen&) const = default;
};

struct Recorder final : cspd::RequestSink {
    std::vector<Seen> requests;
    cspd::SinkAction on_request(const cspd::HttpRequest& request) override {
        Seen seen{std::string(request.method), std::string(request.target), std::string(request.body), {},
                  request.http_major, request.http_minor, request.keep_alive, request.head};
        std::size_t head_bytes = request.method.size() + request.target.size();
        for (const auto& h : request.headers) {
            seen.headers.emplace_back(std::string(h.name), std::string(h.value));
            head_bytes += h.name.size() + h.value.size();
        }
        if (head_bytes > kMaxHead || request.body.size() > kMaxBody) std::abort();  // past its limits
        requests.push_back(std::move(seen));
        return cspd::SinkAction::proceed;
    }
};

struct Outcome {
    std::vector<Seen> requests;
    cspd::HttpParser::Status status = cspd::HttpParser::Status::ok;
};

const std::filesystem::path& spill_folder() {
    static const std::filesystem::path folder = std::filesystem::temp_directory_path();
    return folder;
}

/// Feeds `input` in the pieces `cuts` makes (ascending offsets), stopping at the first verdict
/// other than ok.
Outcome parse(std::string_view input, const std::vector<std::size_t>& cuts) {
    cspd::HttpParser parser({kMaxHead, kMaxBody, kInMemory, &spill_folder()});
    Recorder sink;
    Outcome outcome;
    std::size_t from = 0;
    for (std::size_t i = 0; i <= cuts.size(); ++i) {
        const std::size_t to = i < cuts.size() ? cuts[i] : input.size();
        outcome.status = parser.feed(input.substr(from, to - from), sink);
        from = to;
        if (outcome.status != cspd::HttpParser::Status::ok) break;
    }
    outcome.requests = std::move(sink.requests);
    return outcome;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0 || size > 64 * 1024) return 0;
    const std::string_view input(reinterpret_cast<const char*>(data), size);
    const Outcome whole = parse(input, {});
    const Outcome halves = parse(input, {data[0] % size});
    std::vector<std::size_t> every_byte;
    if (size <= 4096)
        for (std::size_t i = 1; i < size; ++i) every_byte.push_back(i);
    if (halves.requests != whole.requests || halves.status != whole.status) std::abort();
    if (size <= 4096) {
        const Outcome bytes = parse(input, every_byte);
        if (bytes.requests != whole.requests || bytes.status != whole.status) std::abort();
    }
    return 0;
}
