// The SDK's inline helpers (csp/text.h, csp/cookies.h, csp/multipart.h), against a fake host
// table that fills only what they call: reply_reserve, reply_add_header, and for the request-side
// helpers request_header and request_form_arg.
#include <csp/csp.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace {

csp_str str(std::string_view s) { return {s.data(), s.size()}; }
std::string_view view(csp_str s) { return {s.data ? s.data : "", s.size}; }

/// A reply whose body grows in a std::string the test owns, and whose headers are recorded.
struct FakeReply {
    std::string buffer;
    std::vector<std::pair<std::string, std::string>> headers;
    int add_header_result = 0;  // what reply_add_header answers
    csp_host_api api{};
    csp_reply reply{};

    FakeReply() {
        api.size = sizeof api;
        api.reply_reserve = [](csp_reply* r, std::size_t capacity) {
            auto* self = static_cast<FakeReply*>(r->host);
            if (capacity > self->buffer.size()) self->buffer.resize(std::max(capacity, 2 * self->buffer.size()));
            r->data = self->buffer.data();
            r->capacity = self->buffer.size();
            return 0;
        };
        api.reply_add_header = [](csp_reply* r, const char* name, std::size_t name_size, const char* value,
                                  std::size_t value_size) {
            auto* self = static_cast<FakeReply*>(r->host);
            if (self->add_header_result != 0) return self->add_header_result;
            self->headers.emplace_back(std::string(name, name_size), std::string(value, value_size));
            return 0;
        };
        reply.api = &api;
        reply.host = this;
    }
    FakeReply(const FakeReply&) = delete;
    FakeReply& operator=(const FakeReply&) = delete;

    std::string body() const { return std::string(reply.data ? reply.data : "", reply.size); }
};

/// A request with headers and form arguments (first match, as the host answers).
struct FakeRequest {
    std::map<std::string, std::string> headers, form;
    std::string body;
    csp_host_api api{};
    csp_request req{};

    FakeRequest() {
        api.size = sizeof api;
        api.request_header = [](const csp_request* r, const char* name, std::size_t size) {
            const auto* self = static_cast<const FakeRequest*>(r->host);
            const auto it = self->headers.find(std::string(name, size));
            return it == self->headers.end() ? csp_str{nullptr, 0} : str(it->second);
        };
        api.request_form_arg = [](const csp_request* r, const char* name, std::size_t size) {
            const auto* self = static_cast<const FakeRequest*>(r->host);
            const auto it = self->form.find(std::string(name, size));
            return it == self->form.end() ? csp_str{nullptr, 0} : str(it->second);
        };
        req.size = sizeof req;
        req.api = &api;
        req.host = this;
    }
    FakeRequest(const FakeRequest&) = delete;
    FakeRequest& operator=(const FakeRequest&) = delete;
};

// ---- HTML -------------------------------------------------------------------

std::string html(std::string_view text) {
    FakeReply r;
    EXPECT_EQ(csp_reply_append_html(&r.reply, text.data(), text.size()), 0);
    return r.body();
}

TEST(SdkHtml, EscapesEachSpecialCharacter) {
    EXPECT_EQ(html("&"), "&amp;");
    EXPECT_EQ(html("<"), "&lt;");
    EXPECT_EQ(html(">"), "&gt;");
    EXPECT_EQ(html("\""), "&quot;");
    EXPECT_EQ(html("'"), "&#39;");
    EXPECT_EQ(html("<b onclick='x'>\"A&B\"</b>"), "&lt;b onclick=&#39;x&#39;&gt;&quot;A&amp;B&quot;&lt;/b&gt;");
}

TEST(SdkHtml, LeavesOtherBytesAlone) {
    EXPECT_EQ(html(""), "");
    EXPECT_EQ(html("plain text, 100% = ok; é"), "plain text, 100% = ok; é");
    EXPECT_EQ(html(std::string_view("a\0b", 3)), std::string("a\0b", 3));  // binary-safe
}

TEST(SdkHtml, PutsAppendsToWhatIsThere) {
    FakeReply r;
    ASSERT_EQ(csp_reply_puts(&r.reply, "<p>"), 0);
    ASSERT_EQ(csp_reply_puts_html(&r.reply, "<script>"), 0);
    EXPECT_EQ(r.body(), "<p>&lt;script&gt;");
}

// ---- JSON -------------------------------------------------------------------

std::string json(std::string_view text) {
    FakeReply r;
    EXPECT_EQ(csp_reply_json_string(&r.reply, text.data(), text.size()), 0);
    return r.body();
}

TEST(SdkJson, QuotesAndEscapesQuoteAndBackslash) {
    EXPECT_EQ(json(""), "\"\"");
    EXPECT_EQ(json("a \"q\" \\ b"), "\"a \\\"q\\\" \\\\ b\"");
}

TEST(SdkJson, EscapesControlCharacters) {
    EXPECT_EQ(json("\n\r\t"), "\"\\n\\r\\t\"");
    EXPECT_EQ(json(std::string_view("\0", 1)), "\"\\u0000\"");
    EXPECT_EQ(json("\x01\x08\x0c\x1f"), "\"\\u0001\\u0008\\u000c\\u001f\"");
    EXPECT_EQ(json("\x7f"), "\"\\u007f\"");
    EXPECT_EQ(json(" ~"), "\" ~\"");  // 0x20 and 0x7e are plain
}

TEST(SdkJson, WritesCloseTagSlashEscaped) {
    EXPECT_EQ(json("</script>"), "\"<\\/script>\"");
    EXPECT_EQ(json("a/b </ <x/>"), "\"a/b <\\/ <x/>\"");
    EXPECT_EQ(json("/"), "\"/\"");
}

TEST(SdkJson, EscapesCommentOpenerSoAScriptElementStillEnds) {
    // "<!--<script>" would put the HTML tokenizer in a script's double-escaped state, where the
    // page's own </script> does not end the element.
    EXPECT_EQ(json("<!--<script>"), "\"\\u003c!--<script>\"");
    EXPECT_EQ(json("<!"), "\"\\u003c!\"");
    EXPECT_EQ(json("<"), "\"<\"");
    EXPECT_EQ(json("<a"), "\"<a\"");
}

TEST(SdkJson, KeepsValidUtf8) {
    EXPECT_EQ(json("é€😀"), "\"é€😀\"");                            // 2, 3 and 4 bytes
    EXPECT_EQ(json("\xf4\x8f\xbf\xbf"), "\"\xf4\x8f\xbf\xbf\"");  // U+10FFFF
    EXPECT_EQ(json("\xef\xbf\xbf"), "\"\xef\xbf\xbf\"");          // U+FFFF
}

TEST(SdkJson, ReplacesInvalidUtf8) {
    const std::string fffd = "\\ufffd";
    EXPECT_EQ(json("\xff"), "\"" + fffd + "\"");
    EXPECT_EQ(json("a\x80z"), "\"a" + fffd + "z\"");                        // lone continuation
    EXPECT_EQ(json("\xc3"), "\"" + fffd + "\"");                            // truncated at the end
    EXPECT_EQ(json("\xc3(x"), "\"" + fffd + "(x\"");                        // bad continuation
    EXPECT_EQ(json("\xc0\xaf"), "\"" + fffd + fffd + "\"");                 // overlong '/'
    EXPECT_EQ(json("\xe0\x80\xaf"), "\"" + fffd + fffd + fffd + "\"");      // overlong, 3 bytes
    EXPECT_EQ(json("\xed\xa0\x80"), "\"" + fffd + fffd + fffd + "\"");      // surrogate U+D800
    EXPECT_EQ(json("\xf4\x90\x80\x80"), "\"" + fffd + fffd + fffd + fffd + "\"");  // > U+10FFFF
    EXPECT_EQ(json("\xf8\x88\x80\x80\x80"), "\"" + fffd + fffd + fffd + fffd + fffd + "\"");
}

TEST(SdkJson, PutsUsesStrlen) {
    FakeReply r;
    ASSERT_EQ(csp_reply_json_puts(&r.reply, "x\"y"), 0);
    EXPECT_EQ(r.body(), "\"x\\\"y\"");
}

// ---- URLs -------------------------------------------------------------------

std::string url_encode(std::string_view text) {
    FakeReply r;
    EXPECT_EQ(csp_reply_url_encode(&r.reply, text.data(), text.size()), 0);
    return r.body();
}

std::string url_decode(std::string_view text, bool plus_is_space, bool* ok = nullptr) {
    std::string out(text.size(), '\0');
    const std::size_t n = csp_url_decode(text.data(), text.size(), out.data(), plus_is_space);
    if (ok) *ok = n != static_cast<std::size_t>(-1);
    if (n == static_cast<std::size_t>(-1)) return "<bad>";
    out.resize(n);
    return out;
}

TEST(SdkUrl, EncodesAllButUnreserved) {
    EXPECT_EQ(url_encode("AZaz09-._~"), "AZaz09-._~");
    EXPECT_EQ(url_encode("a b&c=d/e?f#g+h%"), "a%20b%26c%3Dd%2Fe%3Ff%23g%2Bh%25");
    EXPECT_EQ(url_encode("é"), "%C3%A9");
    EXPECT_EQ(url_encode(std::string_view("\0\xff", 2)), "%00%FF");
    EXPECT_EQ(url_encode(""), "");
}

TEST(SdkUrl, DecodeRoundTripsEveryByte) {
    std::string all;
    for (int c = 0; c < 256; ++c) all.push_back(static_cast<char>(c));
    const std::string encoded = url_encode(all);
    EXPECT_EQ(url_decode(encoded, false), all);
    EXPECT_EQ(url_decode(encoded, true), all);  // the encoder never writes '+'
}

TEST(SdkUrl, DecodesEscapesOfEitherCase) {
    EXPECT_EQ(url_decode("%41%2f%2F%e9", false), "A//\xe9");
    EXPECT_EQ(url_decode("abc", false), "abc");
    EXPECT_EQ(url_decode("", false), "");
    EXPECT_EQ(url_decode("%00", false), std::string("\0", 1));  // unlike the host's, NUL is allowed
}

TEST(SdkUrl, PlusIsASpaceOnlyWhenAsked) {
    EXPECT_EQ(url_decode("a+b%2B", true), "a b+");
    EXPECT_EQ(url_decode("a+b%2B", false), "a+b+");
}

TEST(SdkUrl, RefusesBadEscapes) {
    for (const char* bad : {"%", "%4", "%zz", "%4g", "%g4", "abc%", "ab%2", "%%41", "% 41"}) {
        bool ok = true;
        url_decode(bad, false, &ok);
        EXPECT_FALSE(ok) << bad;
    }
}

TEST(SdkUrl, DecodesInPlace) {
    char text[] = "a%20b+c";
    const std::size_t n = csp_url_decode(text, sizeof text - 1, text, 1);
    EXPECT_EQ(std::string_view(text, n), "a b c");
}

// ---- redirects --------------------------------------------------------------

TEST(SdkRedirect, AcceptsPathsAndHttpUrls) {
    for (const char* good : {"/", "/csp/done", "/a?b=c#d", "http://example.com", "https://example.com/x",
                             "http://example.com:8080/a", "/a/b//c", "/%2F%2Fevil"})
        EXPECT_TRUE(csp_is_safe_location(good)) << good;
}

TEST(SdkRedirect, RefusesWhatBrowsersReadAsAnotherHostOrScript) {
    for (const char* bad : {"", "//evil", "//evil.com/x", "/\\evil", "\\\\evil", "https:///x", "http:///evil",
                            "http://", "https://", "http:/x", "javascript:alert(1)", "JAVASCRIPT:alert(1)",
                            "data:text/html,x", "ftp://x", "relative/path", "?q=1", "#frag", "/a\\b"})
        EXPECT_FALSE(csp_is_safe_location(bad)) << bad;
}

TEST(SdkRedirect, RefusesControlCharactersAndSpaces) {
    for (const char* bad : {"/a\r\nSet-Cookie: x=1", "/a\nb", "/a\rb", "/a b", "/a\tb", "/a\x7f", "/a\x01",
                            "http://a b.com", " /a"})
        EXPECT_FALSE(csp_is_safe_location(bad)) << bad;
}

TEST(SdkRedirect, SetsLocationAndReturnsTheStatus) {
    for (int status : {301, 302, 303, 307, 308}) {
        FakeReply r;
        EXPECT_EQ(csp_redirect(&r.reply, status, "/csp/done"), status);
        ASSERT_EQ(r.headers.size(), 1u);
        EXPECT_EQ(r.headers[0].first, "Location");
        EXPECT_EQ(r.headers[0].second, "/csp/done");
    }
}

TEST(SdkRedirect, RefusesOtherStatusesWithoutAddingAHeader) {
    for (int status : {0, 200, 300, 304, 305, 306, 309, 400, 500, -1}) {
        FakeReply r;
        EXPECT_EQ(csp_redirect(&r.reply, status, "/ok"), -1) << status;
        EXPECT_TRUE(r.headers.empty()) << status;
    }
}

TEST(SdkRedirect, RefusesUnsafeTargetsWithoutAddingAHeader) {
    FakeReply r;
    EXPECT_EQ(csp_redirect(&r.reply, 302, "//evil"), -1);
    EXPECT_EQ(csp_redirect(&r.reply, 302, "/\\evil"), -1);
    EXPECT_EQ(csp_redirect(&r.reply, 302, "https:///x"), -1);
    EXPECT_EQ(csp_redirect(&r.reply, 302, "javascript:alert(1)"), -1);
    EXPECT_EQ(csp_redirect(&r.reply, 302, "/a\r\nX: y"), -1);
    EXPECT_TRUE(r.headers.empty());
}

TEST(SdkRedirect, FailsWhenTheHostRefusesTheHeader) {
    FakeReply r;
    r.add_header_result = -1;
    EXPECT_EQ(csp_redirect(&r.reply, 303, "/ok"), -1);
}

// ---- typed arguments --------------------------------------------------------

int to_int(const char* text, long long min, long long max, long long* out) {
    return csp_str_to_int(str(text), min, max, out);
}

TEST(SdkStrToInt, ParsesWithinRange) {
    long long v = 7;
    EXPECT_EQ(to_int("0", 0, 10, &v), 0);
    EXPECT_EQ(v, 0);
    EXPECT_EQ(to_int("10", 0, 10, &v), 0);
    EXPECT_EQ(v, 10);
    EXPECT_EQ(to_int("-5", -5, 5, &v), 0);
    EXPECT_EQ(v, -5);
    EXPECT_EQ(to_int("-0", 0, 0, &v), 0);
    EXPECT_EQ(v, 0);
    EXPECT_EQ(to_int("007", 0, 10, &v), 0);
    EXPECT_EQ(v, 7);
}

TEST(SdkStrToInt, RefusesOutOfRangeAndLeavesOutAlone) {
    long long v = 42;
    EXPECT_EQ(to_int("11", 0, 10, &v), -1);
    EXPECT_EQ(to_int("-1", 0, 10, &v), -1);
    EXPECT_EQ(to_int("-6", -5, 5, &v), -1);
    EXPECT_EQ(v, 42);
}

TEST(SdkStrToInt, ReachesInt64Limits) {
    long long v = 0;
    EXPECT_EQ(to_int("9223372036854775807", LLONG_MIN, LLONG_MAX, &v), 0);
    EXPECT_EQ(v, LLONG_MAX);
    EXPECT_EQ(to_int("-9223372036854775808", LLONG_MIN, LLONG_MAX, &v), 0);
    EXPECT_EQ(v, LLONG_MIN);
}

TEST(SdkStrToInt, RefusesOverflow) {
    long long v = 42;
    for (const char* big : {"9223372036854775808", "-9223372036854775809", "18446744073709551615",
                            "18446744073709551616", "99999999999999999999", "-99999999999999999999",
                            "123456789012345678901"})
        EXPECT_EQ(to_int(big, LLONG_MIN, LLONG_MAX, &v), -1) << big;
    EXPECT_EQ(v, 42);
}

TEST(SdkStrToInt, RefusesMalformed) {
    long long v = 42;
    for (const char* bad : {"", "-", "+1", " 1", "1 ", "1a", "0x10", "1.0", "--1", "1-", "١"})
        EXPECT_EQ(to_int(bad, LLONG_MIN, LLONG_MAX, &v), -1) << bad;
    EXPECT_EQ(csp_str_to_int(csp_str{nullptr, 0}, LLONG_MIN, LLONG_MAX, &v), -1);  // absent
    EXPECT_EQ(csp_str_to_int(csp_str{"12", 1}, 0, 100, &v), 0);                  // size, not NUL, ends it
    EXPECT_EQ(v, 1);
}

TEST(SdkFormInt, ReadsTheArgumentOrFallsBack) {
    FakeRequest r;
    r.form = {{"page", "3"}, {"big", "1000"}, {"bad", "x"}, {"empty", ""}};
    EXPECT_EQ(csp_form_int(&r.req, "page", 1, 100, 1), 3);
    EXPECT_EQ(csp_form_int(&r.req, "big", 1, 100, 1), 1);
    EXPECT_EQ(csp_form_int(&r.req, "bad", 1, 100, -7), -7);
    EXPECT_EQ(csp_form_int(&r.req, "empty", 1, 100, 9), 9);
    EXPECT_EQ(csp_form_int(&r.req, "absent", 1, 100, 5), 5);
}

TEST(SdkStrIs, ComparesExactly) {
    EXPECT_TRUE(csp_str_is(str("abc"), "abc"));
    EXPECT_TRUE(csp_str_is(str(""), ""));
    EXPECT_FALSE(csp_str_is(str("abc"), "ab"));
    EXPECT_FALSE(csp_str_is(str("ab"), "abc"));
    EXPECT_FALSE(csp_str_is(str("abc"), "abd"));
    EXPECT_FALSE(csp_str_is(csp_str{nullptr, 0}, ""));  // absent is not empty
    EXPECT_TRUE(csp_str_is(csp_str{"ab\0", 2}, "ab"));
}

// ---- cookies ----------------------------------------------------------------

/// The Set-Cookie value csp_reply_set_cookie adds, or "<refused>".
std::string set_cookie(const char* name, const char* value, const csp_cookie_options* o) {
    FakeReply r;
    if (csp_reply_set_cookie(&r.reply, name, value, o) != 0) {
        EXPECT_TRUE(r.headers.empty());
        return "<refused>";
    }
    EXPECT_EQ(r.headers.size(), 1u);
    if (r.headers.size() != 1) return "<headers>";
    EXPECT_EQ(r.headers[0].first, "Set-Cookie");
    return r.headers[0].second;
}

csp_cookie_options options() {
    csp_cookie_options o;
    std::memset(&o, 0, sizeof o);
    return o;
}

TEST(SdkCookies, WritesNameAndValueAlone) {
    EXPECT_EQ(set_cookie("sid", "abc123", nullptr), "sid=abc123");
    const csp_cookie_options o = options();
    EXPECT_EQ(set_cookie("sid", "abc123", &o), "sid=abc123");
    EXPECT_EQ(set_cookie("sid", "", nullptr), "sid=");  // an empty value is valid
    EXPECT_EQ(set_cookie("a", "x=y/z:!#$%&'()*+-.<>?@[]^_`{|}~", nullptr), "a=x=y/z:!#$%&'()*+-.<>?@[]^_`{|}~");
}

TEST(SdkCookies, WritesAttributesInOneOrder) {
    csp_cookie_options o = options();
    o.path = "/";
    o.domain = "example.com";
    o.max_age = 3600;
    o.secure = 1;
    o.http_only = 1;
    o.same_site = "Lax";
    EXPECT_EQ(set_cookie("session", "tok", &o),
              "session=tok; Path=/; Domain=example.com; Max-Age=3600; Secure; HttpOnly; SameSite=Lax");
    o.same_site = "Strict";
    o.domain = nullptr;
    o.secure = 0;
    EXPECT_EQ(set_cookie("session", "tok", &o), "session=tok; Path=/; Max-Age=3600; HttpOnly; SameSite=Strict");
    o.same_site = "None";
    o.secure = 1;
    o.http_only = 0;
    o.max_age = 0;
    EXPECT_EQ(set_cookie("session", "tok", &o), "session=tok; Path=/; Secure; SameSite=None");
}

TEST(SdkCookies, NegativeMaxAgeRemoves) {
    csp_cookie_options o = options();
    o.max_age = -1;
    EXPECT_EQ(set_cookie("a", "b", &o), "a=b; Max-Age=0");
    o.max_age = LLONG_MIN;
    EXPECT_EQ(set_cookie("a", "b", &o), "a=b; Max-Age=0");
    o.max_age = LLONG_MAX;
    EXPECT_EQ(set_cookie("a", "b", &o), "a=b; Max-Age=9223372036854775807");
}

TEST(SdkCookies, RefusesBadNames) {
    for (const char* bad : {"", "a b", "a=b", "a;b", "a,b", "a\"b", "a\\b", "a/b", "a(b", "a)b", "a<b", "a>b",
                            "a@b", "a:b", "a[b", "a]b", "a?b", "a{b", "a}b", "a\tb", "a\rb", "a\nb", "a\x7f",
                            "a\x01", "\xc3\xa9"})
        EXPECT_EQ(set_cookie(bad, "v", nullptr), "<refused>") << bad;
    for (const char* good : {"a", "A-b_c.d", "!#$%&'*+^`|~", "__Host"})
        EXPECT_NE(set_cookie(good, "v", nullptr), "<refused>") << good;
}

TEST(SdkCookies, RefusesBadValues) {
    for (const char* bad : {"a b", "a\"b", "\"quoted\"", "a,b", "a;b", "a\\b", "a\rb", "a\nb", "a\tb", "a\x7f",
                            "a\x01", "\xc3\xa9", "x; Domain=evil.com"})
        EXPECT_EQ(set_cookie("n", bad, nullptr), "<refused>") << bad;
}

TEST(SdkCookies, RefusesBadAttributes) {
    csp_cookie_options o = options();
    for (const char* bad : {"", "/a;b", "/a\r\n", "/a\x01", "/\x7f", "/é"}) {
        o.path = bad;
        EXPECT_EQ(set_cookie("n", "v", &o), "<refused>") << bad;
    }
    o.path = nullptr;
    for (const char* bad : {"", "a b", "a;b", "a/b", "a:80", "a_b", "é.com", "a\r\n"}) {
        o.domain = bad;
        EXPECT_EQ(set_cookie("n", "v", &o), "<refused>") << bad;
    }
    o.domain = nullptr;
    for (const char* bad : {"", "lax", "STRICT", "none", "Lax ", "Lax; Secure"}) {
        o.same_site = bad;
        EXPECT_EQ(set_cookie("n", "v", &o), "<refused>") << bad;
    }
}

TEST(SdkCookies, SameSiteNoneNeedsSecure) {
    csp_cookie_options o = options();
    o.same_site = "None";
    EXPECT_EQ(set_cookie("n", "v", &o), "<refused>");
    o.secure = 1;
    EXPECT_EQ(set_cookie("n", "v", &o), "n=v; Secure; SameSite=None");
}

TEST(SdkCookies, SecurePrefixNeedsSecure) {
    csp_cookie_options o = options();
    EXPECT_EQ(set_cookie("__Secure-id", "v", &o), "<refused>");
    o.path = "/app";
    o.domain = "example.com";
    o.secure = 1;
    EXPECT_EQ(set_cookie("__Secure-id", "v", &o), "__Secure-id=v; Path=/app; Domain=example.com; Secure");
}

TEST(SdkCookies, HostPrefixNeedsSecurePathSlashAndNoDomain) {
    csp_cookie_options o = options();
    o.secure = 1;
    o.path = "/";
    EXPECT_EQ(set_cookie("__Host-id", "v", &o), "__Host-id=v; Path=/; Secure");
    o.secure = 0;
    EXPECT_EQ(set_cookie("__Host-id", "v", &o), "<refused>");
    o.secure = 1;
    o.path = nullptr;
    EXPECT_EQ(set_cookie("__Host-id", "v", &o), "<refused>");
    o.path = "/app";
    EXPECT_EQ(set_cookie("__Host-id", "v", &o), "<refused>");
    o.path = "/";
    o.domain = "example.com";
    EXPECT_EQ(set_cookie("__Host-id", "v", &o), "<refused>");
}

TEST(SdkCookies, PrefixesMatchWhateverTheirCase) {
    // RFC 6265bis matches the prefixes case-insensitively: a browser drops "__SECURE-x" without
    // Secure, so the builder must not pretend it was set.
    csp_cookie_options o = options();
    EXPECT_EQ(set_cookie("__SECURE-id", "v", &o), "<refused>");
    EXPECT_EQ(set_cookie("__secure-id", "v", &o), "<refused>");
    o.secure = 1;
    EXPECT_EQ(set_cookie("__host-id", "v", &o), "<refused>");  // no Path=/
    o.path = "/";
    EXPECT_EQ(set_cookie("__HOST-id", "v", &o), "__HOST-id=v; Path=/; Secure");
}

TEST(SdkCookies, RefusesALineOverTheBuffer) {
    const std::string value(5000, 'x');
    EXPECT_EQ(set_cookie("n", value.c_str(), nullptr), "<refused>");
    const std::string fits(4000, 'x');
    EXPECT_EQ(set_cookie("n", fits.c_str(), nullptr), "n=" + fits);
}

TEST(SdkCookies, PassesTheHostsRefusalOn) {
    FakeReply r;
    r.add_header_result = -1;
    EXPECT_EQ(csp_reply_set_cookie(&r.reply, "a", "b", nullptr), -1);
}

TEST(SdkCookies, ClearEmitsMaxAgeZero) {
    FakeReply r;
    ASSERT_EQ(csp_reply_clear_cookie(&r.reply, "sid", "/"), 0);
    ASSERT_EQ(csp_reply_clear_cookie(&r.reply, "other", nullptr), 0);
    ASSERT_EQ(csp_reply_clear_cookie(&r.reply, "__Secure-x", "/a"), 0);
    ASSERT_EQ(csp_reply_clear_cookie(&r.reply, "__Host-x", "/"), 0);
    ASSERT_EQ(r.headers.size(), 4u);
    EXPECT_EQ(r.headers[0].second, "sid=; Path=/; Max-Age=0");
    EXPECT_EQ(r.headers[1].second, "other=; Max-Age=0");
    EXPECT_EQ(r.headers[2].second, "__Secure-x=; Path=/a; Max-Age=0; Secure");
    EXPECT_EQ(r.headers[3].second, "__Host-x=; Path=/; Max-Age=0; Secure");
    EXPECT_EQ(csp_reply_clear_cookie(&r.reply, "bad name", "/"), -1);
}

// ---- multipart --------------------------------------------------------------

/// One part, copied out for comparison; "<absent>" for a NULL csp_str.
struct Part {
    std::string name, filename, content_type, data;
};

std::string copy(csp_str s) { return s.data ? std::string(s.data, s.size) : "<absent>"; }

bool inside(csp_str s, std::string_view buffer) {
    return s.data == nullptr || (s.data >= buffer.data() && s.data + s.size <= buffer.data() + buffer.size());
}

/// Every part of `body`; the result of the last csp_multipart_next in *last (-2 if init failed).
std::vector<Part> parts(std::string_view content_type, std::string_view body, int* last) {
    std::vector<Part> out;
    csp_multipart m;
    if (csp_multipart_init(&m, str(content_type), str(body)) != 0) {
        *last = -2;
        return out;
    }
    csp_part part;
    int more;
    while ((more = csp_multipart_next(&m, &part)) == 1) {
        EXPECT_TRUE(inside(part.name, body) && inside(part.filename, body) && inside(part.content_type, body) &&
                    inside(part.headers, body) && inside(part.data, body));
        out.push_back({copy(part.name), copy(part.filename), copy(part.content_type), copy(part.data)});
        if (out.size() > 100) break;
    }
    *last = more;
    EXPECT_EQ(csp_multipart_next(&m, &part), more) << "the end is sticky";
    return out;
}

constexpr std::string_view kBrowserType = "multipart/form-data; boundary=----WebKitFormBoundary7MA4YWxkTrZu0gW";
constexpr char kPng[] = "\x89PNG\r\n\x1a\n\0\0\0\rIHDR";

std::string browser_body() {
    const std::string d = "------WebKitFormBoundary7MA4YWxkTrZu0gW";
    return d + "\r\n" +
           "Content-Disposition: form-data; name=\"title\"\r\n"
           "\r\n"
           "Hello\r\n" +
           d + "\r\n" +
           "Content-Disposition: form-data; name=\"comment\"\r\n"
           "\r\n"
           "two\r\nlines\r\n" +
           d + "\r\n" +
           "Content-Disposition: form-data; name=\"upload\"; filename=\"a b.png\"\r\n"
           "Content-Type: image/png\r\n"
           "\r\n" +
           std::string(kPng, sizeof kPng - 1) + "\r\n" + d + "--\r\n";
}

TEST(SdkMultipart, ReadsABrowsersBody) {
    int last = 0;
    const std::string body = browser_body();
    const auto p = parts(kBrowserType, body, &last);
    EXPECT_EQ(last, 0);
    ASSERT_EQ(p.size(), 3u);
    EXPECT_EQ(p[0].name, "title");
    EXPECT_EQ(p[0].filename, "<absent>");
    EXPECT_EQ(p[0].content_type, "<absent>");
    EXPECT_EQ(p[0].data, "Hello");
    EXPECT_EQ(p[1].name, "comment");
    EXPECT_EQ(p[1].data, "two\r\nlines");
    EXPECT_EQ(p[2].name, "upload");
    EXPECT_EQ(p[2].filename, "a b.png");
    EXPECT_EQ(p[2].content_type, "image/png");
    EXPECT_EQ(p[2].data, std::string(kPng, sizeof kPng - 1));
}

TEST(SdkMultipart, PartsPointIntoTheBodyWithoutCopies) {
    const std::string body = browser_body();
    csp_multipart m;
    ASSERT_EQ(csp_multipart_init(&m, str(kBrowserType), str(body)), 0);
    csp_part part;
    ASSERT_EQ(csp_multipart_next(&m, &part), 1);
    EXPECT_EQ(part.data.data, body.data() + body.find("Hello"));
    EXPECT_EQ(part.name.data, body.data() + body.find("title"));
    EXPECT_EQ(view(part.headers), "Content-Disposition: form-data; name=\"title\"\r\n");
    EXPECT_EQ(part.headers.data, body.data() + body.find("Content-Disposition"));
    ASSERT_EQ(csp_multipart_next(&m, &part), 1);
    ASSERT_EQ(csp_multipart_next(&m, &part), 1);
    EXPECT_EQ(part.data.data, body.data() + body.find("\x89PNG"));
    EXPECT_EQ(part.content_type.data, body.data() + body.find("image/png"));
    EXPECT_EQ(csp_multipart_next(&m, &part), 0);
}

TEST(SdkMultipart, BeginReadsTheRequestsTypeAndBody) {
    FakeRequest r;
    r.headers["Content-Type"] = std::string(kBrowserType);
    r.body = browser_body();
    r.req.body = str(r.body);
    csp_multipart m;
    csp_part part;
    ASSERT_EQ(csp_multipart_begin(&m, &r.req), 0);
    ASSERT_EQ(csp_multipart_next(&m, &part), 1);
    EXPECT_EQ(view(part.data), "Hello");
    FakeRequest none;
    EXPECT_EQ(csp_multipart_begin(&m, &none.req), -1);
    EXPECT_EQ(csp_multipart_next(&m, &part), -1);
}

TEST(SdkMultipart, SkipsPreambleAndEpilogue) {
    const std::string body =
        "This is the preamble.\r\n--XyZ\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\n1\r\n--XyZ--\r\n"
        "This is the epilogue, even with\r\n--XyZ\r\nin it.";
    int last = 0;
    const auto p = parts("multipart/form-data; boundary=XyZ", body, &last);
    EXPECT_EQ(last, 0);
    ASSERT_EQ(p.size(), 1u);
    EXPECT_EQ(p[0].data, "1");
}

TEST(SdkMultipart, AcceptsADelimiterAfterAPreambleThatIsOnlyCrlf) {
    int last = 0;
    const auto p =
        parts("multipart/form-data; boundary=b", "\r\n--b\r\nContent-Disposition: form-data; name=x\r\n\r\nv\r\n--b--",
              &last);
    EXPECT_EQ(last, 0);
    ASSERT_EQ(p.size(), 1u);
    EXPECT_EQ(p[0].name, "x");  // unquoted parameter
}

TEST(SdkMultipart, ReadsQuotedAndUnquotedBoundaries) {
    const std::string body = "--a b:c\r\nContent-Disposition: form-data; name=\"f\"\r\n\r\nv\r\n--a b:c--";
    int last = 0;
    auto p = parts("multipart/form-data; boundary=\"a b:c\"", body, &last);
    EXPECT_EQ(last, 0);
    ASSERT_EQ(p.size(), 1u);
    EXPECT_EQ(p[0].data, "v");
    // Unquoted, the boundary stops at the space: "a", which this body never uses as a delimiter.
    p = parts("multipart/form-data; boundary=a b:c", body, &last);
    EXPECT_EQ(last, -1);
    p = parts("multipart/form-data; charset=\"x;boundary=no\"; boundary=zz",
              "--zz\r\nContent-Disposition: form-data; name=q\r\n\r\n\r\n--zz--", &last);
    EXPECT_EQ(last, 0);
    ASSERT_EQ(p.size(), 1u);
    EXPECT_EQ(p[0].data, "");
}

TEST(SdkMultipart, MatchesTypeAndParameterNamesWhateverTheirCase) {
    int last = 0;
    const auto p = parts("Multipart/Form-Data;BOUNDARY=b",
                         "--b\r\ncontent-disposition: FORM-DATA; NAME=\"n\"; FileName=\"f\"\r\n"
                         "CONTENT-TYPE: text/plain\r\n\r\nv\r\n--b--",
                         &last);
    EXPECT_EQ(last, 0);
    ASSERT_EQ(p.size(), 1u);
    EXPECT_EQ(p[0].name, "n");
    EXPECT_EQ(p[0].filename, "f");
    EXPECT_EQ(p[0].content_type, "text/plain");
}

TEST(SdkMultipart, RefusesOtherTypesAndBadBoundaries) {
    const std::string body = "--b\r\nContent-Disposition: form-data; name=a\r\n\r\nv\r\n--b--";
    const std::string b70(70, 'x'), b71(71, 'x');
    int last = 0;
    for (const std::string& ct : std::vector<std::string>{"", "multipart/form-data", "multipart/form-data;", "multipart/form-data; boundary=",
          "multipart/form-data; boundary=\"\"", "multipart/form-data boundary=b", "multipart/form-dataX; boundary=b",
          "multipart/mixed; boundary=b", "text/plain; boundary=b", "multipart/form-data; xboundary=b",
          "multipart/form-data; boundary=" + b71, "multipart/form-data; boundary=\"" + b71 + "\""}) {
        parts(ct, body, &last);
        EXPECT_EQ(last, -2) << ct;
    }
    csp_multipart m;
    EXPECT_EQ(csp_multipart_init(&m, csp_str{nullptr, 0}, str(body)), -1);
    const std::string body70 = "--" + b70 + "\r\nContent-Disposition: form-data; name=a\r\n\r\nv\r\n--" + b70 + "--";
    const auto p = parts("multipart/form-data; boundary=" + b70, body70, &last);
    EXPECT_EQ(last, 0);
    EXPECT_EQ(p.size(), 1u);
}

TEST(SdkMultipart, ToleratesSpaceAroundTypeAndBoundaryParameter) {
    int last = 0;
    const auto p = parts("multipart/form-data ;  boundary = b ; charset=utf-8",
                         "--b\r\nContent-Disposition: form-data; name=a\r\n\r\nv\r\n--b--", &last);
    EXPECT_EQ(last, 0);
    EXPECT_EQ(p.size(), 1u);
}

TEST(SdkMultipart, ToleratesPaddingAfterADelimiter) {
    int last = 0;
    const auto p = parts("multipart/form-data; boundary=b",
                         "--b \t\r\nContent-Disposition: form-data; name=a\r\n\r\nv\r\n--b--", &last);
    EXPECT_EQ(last, 0);
    EXPECT_EQ(p.size(), 1u);
}

TEST(SdkMultipart, EmptyBodyAndNoPartsAtAll) {
    int last = 0;
    EXPECT_TRUE(parts("multipart/form-data; boundary=b", "", &last).empty());
    EXPECT_EQ(last, -1);
    EXPECT_TRUE(parts("multipart/form-data; boundary=b", "--b--", &last).empty());
    EXPECT_EQ(last, 0);
    EXPECT_TRUE(parts("multipart/form-data; boundary=b", "no delimiter at all", &last).empty());
    EXPECT_EQ(last, -1);
}

TEST(SdkMultipart, RefusesTruncatedBodies) {
    const std::string whole = "--b\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nvalue\r\n--b--\r\n";
    // Every cut before the closing "--" is malformed: a part is only whole once its delimiter came.
    const std::size_t closing = whole.rfind("--");
    for (std::size_t cut = 0; cut < closing; ++cut) {
        int last = 0;
        const auto p = parts("multipart/form-data; boundary=b", whole.substr(0, cut), &last);
        EXPECT_EQ(last, -1) << cut;
        EXPECT_TRUE(p.empty()) << cut;
    }
}

TEST(SdkMultipart, RefusesAMissingFinalDelimiter) {
    int last = 0;
    auto p = parts("multipart/form-data; boundary=b", "--b\r\nContent-Disposition: form-data; name=a\r\n\r\nv",
                   &last);
    EXPECT_EQ(last, -1);
    EXPECT_TRUE(p.empty());
    // The first part is whole and is returned; the second has no delimiter after it.
    p = parts("multipart/form-data; boundary=b",
              "--b\r\nContent-Disposition: form-data; name=a\r\n\r\nv\r\n--b\r\n"
              "Content-Disposition: form-data; name=c\r\n\r\nw",
              &last);
    EXPECT_EQ(last, -1);
    ASSERT_EQ(p.size(), 1u);
    EXPECT_EQ(p[0].name, "a");
    // A delimiter that is neither closed by "--" nor followed by a line break.
    p = parts("multipart/form-data; boundary=b", "--b\r\nContent-Disposition: form-data; name=a\r\n\r\nv\r\n--b",
              &last);
    EXPECT_EQ(last, -1);
    EXPECT_EQ(p.size(), 1u);
}

TEST(SdkMultipart, RefusesAPartWithoutANamedFormDataDisposition) {
    for (const char* headers : {"Content-Type: text/plain\r\n", "Content-Disposition: form-data\r\n",
                                "Content-Disposition: form-data; filename=\"f\"\r\n",
                                "Content-Disposition: attachment; name=\"a\"\r\n",
                                "Content-Disposition: form-dataX; name=\"a\"\r\n",
                                "Content-Disposition: form; name=\"a\"\r\n", "Content-Disposition : form-data; name=a\r\n",
                                "no colon here\r\n"}) {
        int last = 0;
        const auto p = parts("multipart/form-data; boundary=b",
                             std::string("--b\r\n") + headers + "\r\nv\r\n--b--", &last);
        EXPECT_EQ(last, -1) << headers;
        EXPECT_TRUE(p.empty()) << headers;
    }
}

TEST(SdkMultipart, RefusesAPartWithNoHeaderBlock) {
    // A blank line straight after the delimiter: headers are empty, so there is no disposition.
    int last = 0;
    EXPECT_TRUE(parts("multipart/form-data; boundary=b", "--b\r\n\r\nv\r\n--b--", &last).empty());
    EXPECT_EQ(last, -1);
}

TEST(SdkMultipart, RefusesHeadersThatRunIntoTheNextPart) {
    // The first part never ends its headers with a blank line: its header block must not swallow
    // the next delimiter and that part's headers (which would name it "admin").
    int last = 0;
    const auto p = parts("multipart/form-data; boundary=b",
                         "--b\r\nContent-Disposition: form-data; name=\"a\"\r\n--b\r\n"
                         "Content-Disposition: form-data; name=\"admin\"\r\n\r\nX\r\n--b--",
                         &last);
    EXPECT_EQ(last, -1);
    EXPECT_TRUE(p.empty());
}

TEST(SdkMultipart, ReadsAPartWhoseHeadersEndAtTheDelimiter) {
    // RFC 2046 makes a part's body optional: the last header's CRLF, then the delimiter's CRLF.
    int last = 0;
    const auto p = parts("multipart/form-data; boundary=b",
                         "--b\r\nContent-Disposition: form-data;name=a\r\n\r\n--b\r\n"
                         "Content-Disposition: form-data; name=c\r\n\r\nw\r\n--b--",
                         &last);
    EXPECT_EQ(last, 0);
    ASSERT_EQ(p.size(), 2u);
    EXPECT_EQ(p[0].name, "a");
    EXPECT_EQ(p[0].data, "");
    EXPECT_EQ(p[1].name, "c");
    EXPECT_EQ(p[1].data, "w");
}

TEST(SdkMultipart, ReadsEmptyPartsAndEmptyFilenames) {
    int last = 0;
    const auto p = parts("multipart/form-data; boundary=b",
                         "--b\r\nContent-Disposition: form-data; name=\"\"\r\n\r\n\r\n"
                         "--b\r\nContent-Disposition: form-data; name=\"file\"; filename=\"\"\r\n"
                         "Content-Type: application/octet-stream\r\n\r\n\r\n--b--",
                         &last);
    EXPECT_EQ(last, 0);
    ASSERT_EQ(p.size(), 2u);
    EXPECT_EQ(p[0].name, "");  // present, empty
    EXPECT_EQ(p[0].data, "");
    EXPECT_EQ(p[1].filename, "");  // a file input with no file chosen
    EXPECT_EQ(p[1].content_type, "application/octet-stream");
    EXPECT_EQ(p[1].data, "");
}

TEST(SdkMultipart, KeepsBinaryDataThatLooksLikeADelimiter) {
    // Everything but CRLF "--" boundary itself is data: "--b" at a line start without the CR,
    // "\r\n--" with another boundary, "\r\n-b", a boundary not after a line break, NULs.
    const std::string data = std::string("\r\n--\r\n--c\r\n-b\r\n\n--b--b\r--b\0\r\n--", 29) + "\xff\xfe\r\n";
    const std::string body = "--b\r\nContent-Disposition: form-data; name=\"bin\"; filename=\"x.bin\"\r\n"
                             "Content-Type: application/octet-stream\r\n\r\n" +
                             data + "\r\n--b--\r\n";
    int last = 0;
    const auto p = parts("multipart/form-data; boundary=b", body, &last);
    EXPECT_EQ(last, 0);
    ASSERT_EQ(p.size(), 1u);
    EXPECT_EQ(p[0].data, data);
}

TEST(SdkMultipart, EndsADelimiterThatIsAPrefixOfLongerText) {
    // CRLF "--b" inside data ends the part even when more boundary-like text follows it (RFC 2046
    // §5.1.1: a sender picks a boundary the data never holds): what follows is then malformed.
    int last = 0;
    const auto p = parts("multipart/form-data; boundary=b",
                         "--b\r\nContent-Disposition: form-data; name=a\r\n\r\nx\r\n--bb\r\n--b--", &last);
    EXPECT_EQ(last, -1);
    ASSERT_EQ(p.size(), 1u);
    EXPECT_EQ(p[0].data, "x");
}

TEST(SdkMultipart, RefusesLfOnlyLineEndings) {
    // RFC 2046 and RFC 7578 require CRLF; a body whose lines end in LF alone (hand-made with
    // curl --data-binary from a Unix file, say) has no delimiter line ending in CRLF, so the
    // iterator reports it malformed instead of guessing.
    int last = 0;
    const auto p =
        parts("multipart/form-data; boundary=b", "--b\nContent-Disposition: form-data; name=a\n\nv\n--b--\n", &last);
    EXPECT_EQ(last, -1);
    EXPECT_TRUE(p.empty());
}

TEST(SdkMultipart, ReadsQuotedParametersWithSemicolonsAndEscapes) {
    int last = 0;
    const auto p = parts("multipart/form-data; boundary=b",
                         "--b\r\nContent-Disposition: form-data; filename=\"x; name=evil\"; name=\"real\\\"q\"\r\n\r\n"
                         "v\r\n--b--",
                         &last);
    EXPECT_EQ(last, 0);
    ASSERT_EQ(p.size(), 1u);
    EXPECT_EQ(p[0].name, "real\\\"q");  // as sent between its quotes
    EXPECT_EQ(p[0].filename, "x; name=evil");
}

TEST(SdkMultipart, StaysMalformedOnceMalformed) {
    csp_multipart m;
    const std::string body = "--b\r\nbroken";
    ASSERT_EQ(csp_multipart_init(&m, str("multipart/form-data; boundary=b"), str(body)), 0);
    csp_part part;
    EXPECT_EQ(csp_multipart_next(&m, &part), -1);
    EXPECT_EQ(csp_multipart_next(&m, &part), -1);
}

}  // namespace
