// libFuzzer target: the multipart/form-data iterator (csp/multipart.h). The input's first line is
// the Content-Type, the rest the body; each lives in a buffer of exactly its size, so a read past
// either is an ASan report. Every part must point into the body, in order, and end at a delimiter.
#include <csp/csp.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string_view>

namespace {

void check(bool ok) {
    if (!ok) std::abort();
}

bool inside(csp_str s, const char* begin, std::size_t size) {
    return s.data == nullptr || (s.data >= begin && s.size <= size && s.data + s.size <= begin + size);
}

bool within(csp_str inner, csp_str outer) {
    return inner.data == nullptr ||
           (inner.data >= outer.data && inner.data + inner.size <= outer.data + outer.size);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view input(reinterpret_cast<const char*>(data), size);
    const std::size_t newline = input.find('\n');
    const std::string_view type_text = input.substr(0, newline);
    const std::string_view body_text = newline == std::string_view::npos ? std::string_view{} : input.substr(newline + 1);
    const std::unique_ptr<char[]> type(new char[type_text.size()]), body(new char[body_text.size()]);
    if (!type_text.empty()) std::memcpy(type.get(), type_text.data(), type_text.size());
    if (!body_text.empty()) std::memcpy(body.get(), body_text.data(), body_text.size());

    csp_multipart m;
    if (csp_multipart_init(&m, csp_str{type.get(), type_text.size()}, csp_str{body.get(), body_text.size()}) != 0) {
        csp_part part;
        check(csp_multipart_next(&m, &part) == -1);
        return 0;
    }
    check(m.delimiter_size >= 5 && m.delimiter_size <= 74 && std::memcmp(m.delimiter, "\r\n--", 4) == 0);
    const std::string_view delimiter(m.delimiter, m.delimiter_size);
    check(type_text.find(delimiter.substr(4)) != std::string_view::npos);

    const char* after_previous = body.get();
    csp_part part;
    int more = 0;
    for (int n = 0; n < 10000 && (more = csp_multipart_next(&m, &part)) == 1; ++n) {
        for (csp_str s : {part.name, part.filename, part.content_type, part.headers, part.data})
            check(inside(s, body.get(), body_text.size()));
        check(part.name.data != nullptr && part.headers.data != nullptr && part.data.data != nullptr);
        check(within(part.name, part.headers) && within(part.filename, part.headers) &&
              within(part.content_type, part.headers));
        check(part.headers.data >= after_previous && part.headers.data + part.headers.size <= part.data.data);
        // Neither the headers nor the data hold a delimiter: a part never runs into the next one.
        check(std::string_view(part.headers.data, part.headers.size).find(delimiter) == std::string_view::npos);
        check(std::string_view(part.data.data, part.data.size).find(delimiter) == std::string_view::npos);
        const std::size_t end = static_cast<std::size_t>(part.data.data - body.get()) + part.data.size;
        check(body_text.substr(end, delimiter.size()) == delimiter);
        after_previous = body.get() + end + delimiter.size();
    }
    check(more == 1 || csp_multipart_next(&m, &part) == more);  // the end is sticky
    return 0;
}
