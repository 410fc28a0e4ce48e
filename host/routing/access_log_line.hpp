// One access log line: what a request was, who sent it, what it got and how long it took, in
// nginx's "combined" format (byte for byte, so goaccess, fail2ban and the rest read it
// unchanged) or as one JSON object. Whatever a client sends, it cannot forge a second line or
// break the JSON: every byte it chose is escaped. No I/O: the lines go to an AccessLog.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace cspd {

enum class AccessLogFormat : std::uint8_t { combined, json };

/// What answered a request.
enum class Responder : std::uint8_t { handler, static_file, builtin, none };

struct AccessRecord {
    std::int64_t unix_us = 0;  ///< when the answer was handed to the connection
    std::string_view client_address;
    unsigned short client_port = 0;
    std::string_view method;  ///< empty: the request could not be parsed
    std::string_view target;
    std::uint8_t http_major = 1, http_minor = 1;
    int status = 0;           ///< what the client got (499: it left before its answer)
    int intended_status = 0;  ///< for a 499, the status it was going to get, if known (0: not)
    std::uint64_t bytes = 0;       ///< the whole response: head and body
    std::uint64_t body_bytes = 0;  ///< the body alone (nginx's $body_bytes_sent)
    std::string_view referer, user_agent;
    std::uint64_t duration_us = 0;  ///< from the request's head parsed to its answer handed over
    Responder responder = Responder::none;
    std::string_view handler;         ///< its name, when a handler answered
    std::uint64_t handler_hash = 0;   ///< the version's FNV-1a 64, when a handler answered
    bool cached = false;              ///< the reply cache answered
    std::string_view request_id;
    unsigned worker = 0;
};

/// Turns a time into nginx's $time_local ("02/Dec/2026:16:28:33 +0000") and RFC 3339 with
/// milliseconds ("2026-12-02T16:28:33.123Z"), formatting the date part once a second.
class AccessTime {
public:
    std::string_view local(std::int64_t unix_us);
    std::string_view rfc3339(std::int64_t unix_us);

private:
    void refresh(std::int64_t second);
    std::int64_t second_ = -1;
    char local_[32] = {};
    std::size_t local_size_ = 0;
    char rfc_[32] = {};  // the date and time to the second; milliseconds are added per call
    std::size_t rfc_size_ = 0;
};

/// The bytes of a response's head at the start of `answer` (all of them if its end is not there).
std::size_t response_head_size(std::string_view answer);

/// Appends `record` as one line, ending in "\n".
void append_access_line(std::string& out, const AccessRecord& record, AccessLogFormat format, AccessTime& time);

}  // namespace cspd
