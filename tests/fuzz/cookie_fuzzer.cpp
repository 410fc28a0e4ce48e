// libFuzzer target: the Cookie request header (for_each_cookie) and the Set-Cookie builder
// (csp_reply_set_cookie, csp/cookies.h). The first byte picks the options; the rest, split at
// '\n', gives name, value, path and domain. Whatever the builder accepts must be one header line
// a browser reads back as exactly that name and value, and must obey the prefix rules.
#include "common/ascii.hpp"
#include "http/cookie_header.hpp"

#include <csp/csp.h>

#include <climits>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace {

void check(bool ok) {
    if (!ok) std::abort();
}

bool inside(std::string_view part, std::string_view whole) {
    return part.data() >= whole.data() && part.data() + part.size() <= whole.data() + whole.size();
}

struct FakeReply {
    std::vector<std::pair<std::string, std::string>> headers;
    csp_host_api api{};
    csp_reply reply{};
    FakeReply() {
        api.size = sizeof api;
        api.reply_reserve = [](csp_reply*, std::size_t) { return -1; };  // the builder never appends
        api.reply_add_header = [](csp_reply* r, const char* name, std::size_t name_size, const char* value,
                                  std::size_t value_size) {
            static_cast<FakeReply*>(r->host)->headers.emplace_back(std::string(name, name_size),
                                                                   std::string(value, value_size));
            return 0;
        };
        reply.api = &api;
        reply.host = this;
    }
};

bool has_prefix(std::string_view name, std::string_view prefix) {
    return name.size() >= prefix.size() && cspd::iequals(name.substr(0, prefix.size()), prefix);
}

/// What a browser sends back for `line`'s cookie: the first pair of a Cookie header made of it.
std::pair<std::string, std::string> read_back(std::string_view text) {
    std::pair<std::string, std::string> first{"<none>", ""};
    cspd::for_each_cookie(text, [&](std::string_view name, std::string_view value) {
        first = {std::string(name), std::string(value)};
        return false;
    });
    return first;
}

void fuzz_cookie_header(std::string_view input) {
    std::size_t calls = 0;
    cspd::for_each_cookie(input, [&](std::string_view name, std::string_view value) {
        check(inside(name, input) && inside(value, input));
        check(!name.empty());
        check(name.find(';') == std::string_view::npos && value.find(';') == std::string_view::npos);
        check(name.front() != ' ' && name.front() != '\t' && name.back() != ' ' && name.back() != '\t');
        check(name.find('=') == std::string_view::npos);
        return ++calls < 1000;
    });
}

void fuzz_set_cookie(const std::uint8_t* data, std::size_t size) {
    if (size == 0) return;
    const unsigned flags = data[0];
    std::vector<std::string> fields(4);
    std::size_t field = 0;
    for (std::size_t i = 1; i < size; ++i) {
        if (data[i] == '\n' && field < 3) ++field;
        else fields[field].push_back(static_cast<char>(data[i]));
    }
    // What a C caller passes: each field ends at its first NUL.
    const std::string name = fields[0].c_str(), value = fields[1].c_str();
    const std::string path = fields[2].c_str(), domain = fields[3].c_str();
    static const char* const same_sites[] = {nullptr, "Strict", "Lax", "None"};
    csp_cookie_options o{};
    o.secure = flags & 1;
    o.http_only = (flags >> 1) & 1;
    o.same_site = same_sites[(flags >> 2) & 3];
    o.path = (flags & 16) ? path.c_str() : nullptr;
    o.domain = (flags & 32) ? domain.c_str() : nullptr;
    const long long ages[] = {0, 1 + static_cast<long long>(size), -1, LLONG_MAX};
    o.max_age = ages[(flags >> 6) & 3];

    FakeReply r;
    const int result = csp_reply_set_cookie(&r.reply, name.c_str(), value.c_str(), &o);
    if (result != 0) {
        check(result == -1 && r.headers.empty());
        return;
    }
    check(r.headers.size() == 1 && r.headers[0].first == "Set-Cookie");
    const std::string& line = r.headers[0].second;
    check(line.find_first_of(std::string_view("\r\n\0", 3)) == std::string::npos);
    check(!name.empty() && name.find_first_of(" \t;=,\"\\") == std::string::npos);
    check(value.find_first_of(" \t;,\"\\") == std::string::npos);
    const std::string pair = name + "=" + value;
    check(line.compare(0, pair.size(), pair) == 0);
    check(line.size() == pair.size() || line.compare(pair.size(), 2, "; ") == 0);
    check(read_back(pair) == std::make_pair(name, value));
    check(read_back(line) == std::make_pair(name, value));
    if (has_prefix(name, "__Secure-")) check(o.secure);
    if (has_prefix(name, "__Host-")) check(o.secure && !o.domain && o.path && path == "/");
    if (o.same_site && std::string_view(o.same_site) == "None") check(o.secure);

    FakeReply cleared;
    if (csp_reply_clear_cookie(&cleared.reply, name.c_str(), o.path) == 0) {
        check(cleared.headers.size() == 1);
        check(cleared.headers[0].second.find("; Max-Age=0") != std::string::npos);
        check(read_back(cleared.headers[0].second) == std::make_pair(name, std::string()));
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    fuzz_cookie_header(std::string_view(reinterpret_cast<const char*>(data), size));
    fuzz_set_cookie(data, size);
    return 0;
}
