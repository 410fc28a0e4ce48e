// libFuzzer target: access log lines (routing/access_log_line) from fields a client chooses.
// The input, split at '\n', gives method, target, referer and user agent. Whatever they hold:
// a combined line is one line of printable ASCII with exactly its six quotes, and a JSON line is
// one line that parses, giving back each field as sent when the field is valid UTF-8.
#include "routing/access_log_line.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

namespace {

void check(bool ok) {
    if (!ok) std::abort();
}

bool valid_utf8(const std::string& text) {
    try {
        (void)nlohmann::json(text).dump();  // throws on bytes that are not UTF-8
        return true;
    } catch (const nlohmann::json::type_error&) {
        return false;
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view input(reinterpret_cast<const char*>(data), size);
    std::vector<std::string> fields;
    std::size_t start = 0;
    for (int i = 0; i < 4; ++i) {
        const std::size_t end = input.find('\n', start);
        fields.emplace_back(input.substr(std::min(start, input.size()), end == std::string_view::npos ? std::string_view::npos : end - start));
        start = end == std::string_view::npos ? input.size() : end + 1;
    }
    cspd::AccessRecord record;
    record.unix_us = 1'796'228'913'123'456;
    record.client_address = "192.0.2.1";
    record.method = fields[0];
    record.target = fields[1];
    record.referer = fields[2];
    record.user_agent = fields[3];
    record.status = 200;
    record.responder = cspd::Responder::handler;
    record.handler = fields[1];
    static cspd::AccessTime time;

    std::string combined;
    cspd::append_access_line(combined, record, cspd::AccessLogFormat::combined, time);
    check(!combined.empty() && combined.back() == '\n');
    std::size_t quotes = 0;
    for (std::size_t i = 0; i + 1 < combined.size(); ++i) {
        const auto byte = static_cast<unsigned char>(combined[i]);
        check(byte >= 0x20 && byte <= 0x7e);
        quotes += combined[i] == '"';
    }
    check(quotes == 6);

    std::string json;
    cspd::append_access_line(json, record, cspd::AccessLogFormat::json, time);
    check(json.find('\n') == json.size() - 1);
    const auto doc = nlohmann::json::parse(json);  // throws (and so fails) if it is not JSON
    const char* names[] = {"method", "target", "referer", "user_agent"};
    for (int i = 0; i < 4; ++i)
        if (valid_utf8(fields[i])) check(doc[names[i]].get<std::string>() == fields[i]);
    return 0;
}
