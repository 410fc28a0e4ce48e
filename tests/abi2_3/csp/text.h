/* cspd handler SDK: output helpers, inline so they cost no ABI (included by csp/csp.h).
 *
 *   csp_reply_puts_html(reply, user_text);          <b>&lt;script&gt;</b>, not a script
 *   csp_reply_json_string(reply, s.data, s.size);   "a \"quoted\"\nline"
 *   return csp_redirect(reply, 303, "/csp/guestbook");
 */
#ifndef CSP_TEXT_H
#define CSP_TEXT_H

#include <csp/csp.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- HTML ------------------------------------------------------------- */

/* Appends `size` bytes with & < > " ' escaped, so that the text is only ever text, in an
 * element or in a quoted attribute. 0, or -1 when out of memory. */
static inline int csp_reply_append_html(csp_reply *reply, const char *text, size_t size) {
    size_t start = 0;
    for (size_t i = 0; i < size; ++i) {
        const char *entity;
        switch (text[i]) {
        case '&': entity = "&amp;"; break;
        case '<': entity = "&lt;"; break;
        case '>': entity = "&gt;"; break;
        case '"': entity = "&quot;"; break;
        case '\'': entity = "&#39;"; break;
        default: continue;
        }
        if (csp_reply_append(reply, text + start, i - start) != 0 || csp_reply_puts(reply, entity) != 0)
            return -1;
        start = i + 1;
    }
    return csp_reply_append(reply, text + start, size - start);
}

static inline int csp_reply_puts_html(csp_reply *reply, const char *text) {
    return csp_reply_append_html(reply, text, strlen(text));
}

/* ---- JSON ------------------------------------------------------------- */

/* The length of the valid UTF-8 sequence at `s` (1 to 4), or 0 if it is not one. */
static inline size_t csp_utf8_sequence(const unsigned char *s, size_t size) {
    if (s[0] < 0x80) return 1;
    size_t n;
    unsigned min;
    unsigned code;
    if ((s[0] & 0xE0) == 0xC0) n = 2, min = 0x80, code = s[0] & 0x1Fu;
    else if ((s[0] & 0xF0) == 0xE0) n = 3, min = 0x800, code = s[0] & 0x0Fu;
    else if ((s[0] & 0xF8) == 0xF0) n = 4, min = 0x10000, code = s[0] & 0x07u;
    else return 0;
    if (n > size) return 0;
    for (size_t i = 1; i < n; ++i) {
        if ((s[i] & 0xC0) != 0x80) return 0;
        code = (code << 6) | (s[i] & 0x3Fu);
    }
    if (code < min || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) return 0;
    return n;
}

/* Appends `size` bytes as one JSON string, quotes included: " \ and control characters escaped,
 * and "</" written "<\/" and "<!" "\u003c!" so the string is safe inside a <script> too. Bytes
 * that are not UTF-8 become U+FFFD: the output is always valid JSON. 0, or -1 when out of memory. */
static inline int csp_reply_json_string(csp_reply *reply, const char *text, size_t size) {
    static const char hex[] = "0123456789abcdef";
    const unsigned char *s = (const unsigned char *)text;
    if (csp_reply_append(reply, "\"", 1) != 0) return -1;
    size_t start = 0, i = 0;
    while (i < size) {
        char escape[8];
        size_t escape_size = 2;
        escape[0] = '\\';
        const unsigned char c = s[i];
        if (c == '"' || c == '\\') escape[1] = (char)c;
        else if (c == '\n') escape[1] = 'n';
        else if (c == '\r') escape[1] = 'r';
        else if (c == '\t') escape[1] = 't';
        else if (c == '/' && i > 0 && s[i - 1] == '<') escape[1] = '/';
        else if (c == '<' && i + 1 < size && s[i + 1] == '!') {
            /* "<!--" puts a script in its escaped state, where the page's own </script> may not end it. */
            memcpy(escape + 1, "u003c", 5);
            escape_size = 6;
        }
        else if (c < 0x20 || c == 0x7f) {
            memcpy(escape + 1, "u00", 3);
            escape[4] = hex[c >> 4];
            escape[5] = hex[c & 15];
            escape_size = 6;
        } else if (c >= 0x80) {
            const size_t n = csp_utf8_sequence(s + i, size - i);
            if (n) {
                i += n;
                continue;
            }
            memcpy(escape + 1, "ufffd", 5);
            escape_size = 6;
        } else {
            ++i;
            continue;
        }
        if (csp_reply_append(reply, text + start, i - start) != 0 ||
            csp_reply_append(reply, escape, escape_size) != 0)
            return -1;
        start = ++i;
    }
    if (csp_reply_append(reply, text + start, size - start) != 0) return -1;
    return csp_reply_append(reply, "\"", 1);
}

static inline int csp_reply_json_puts(csp_reply *reply, const char *text) {
    return csp_reply_json_string(reply, text, strlen(text));
}

/* ---- URLs ------------------------------------------------------------- */

/* Appends `size` bytes percent-encoded: everything but A-Z a-z 0-9 - . _ ~ becomes %XX, so the
 * result is safe as a query value or a path segment. 0, or -1 when out of memory. */
static inline int csp_reply_url_encode(csp_reply *reply, const char *text, size_t size) {
    static const char hex[] = "0123456789ABCDEF";
    size_t start = 0;
    for (size_t i = 0; i < size; ++i) {
        const unsigned char c = (unsigned char)text[i];
        if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
            c == '_' || c == '~')
            continue;
        const char escape[3] = {'%', hex[c >> 4], hex[c & 15]};
        if (csp_reply_append(reply, text + start, i - start) != 0 || csp_reply_append(reply, escape, 3) != 0)
            return -1;
        start = i + 1;
    }
    return csp_reply_append(reply, text + start, size - start);
}

static inline int csp_hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Decodes %XX escapes (and `+` as a space when `plus_is_space`) from `size` bytes at `in` into
 * `out`, which needs `size` bytes and may be `in` itself. The decoded size, or (size_t)-1 for a
 * bad escape. */
static inline size_t csp_url_decode(const char *in, size_t size, char *out, int plus_is_space) {
    size_t n = 0;
    for (size_t i = 0; i < size; ++i) {
        if (in[i] == '%') {
            if (i + 2 >= size) return (size_t)-1;
            const int high = csp_hex_digit(in[i + 1]), low = csp_hex_digit(in[i + 2]);
            if (high < 0 || low < 0) return (size_t)-1;
            out[n++] = (char)(high * 16 + low);
            i += 2;
        } else {
            out[n++] = plus_is_space && in[i] == '+' ? ' ' : in[i];
        }
    }
    return n;
}

/* ---- redirects -------------------------------------------------------- */

/* True for a Location a redirect may send: a path on this site ("/x", not "//x" or "/\x", which
 * browsers read as another host), or an absolute http:// or https:// URL; no control characters,
 * spaces or backslashes. */
static inline int csp_is_safe_location(const char *location) {
    const size_t size = strlen(location);
    if (size == 0) return 0;
    for (size_t i = 0; i < size; ++i) {
        const unsigned char c = (unsigned char)location[i];
        if (c <= 0x20 || c == 0x7f || c == '\\') return 0;
    }
    if (location[0] == '/') return size == 1 || location[1] != '/';
    if (strncmp(location, "http://", 7) == 0) return size > 7 && location[7] != '/';
    if (strncmp(location, "https://", 8) == 0) return size > 8 && location[8] != '/';
    return 0;
}

/* Sets `Location` for a redirect and returns `status` (301, 302, 303, 307 or 308) for the handler to
 * return: `return csp_redirect(reply, 303, "/csp/done");`. -1 (which the host answers with a 500,
 * logged) for another status or a target csp_is_safe_location refuses. */
static inline int csp_redirect(csp_reply *reply, int status, const char *location) {
    if (status != 301 && status != 302 && status != 303 && status != 307 && status != 308) return -1;
    if (!csp_is_safe_location(location) || csp_reply_add_header(reply, "Location", location) != 0) return -1;
    return status;
}

/* ---- typed arguments -------------------------------------------------- */

/* Parses `value` as a decimal integer (an optional '-', then digits; nothing else) within
 * [min, max] into *out. 0, or -1 when absent, malformed or out of range (*out untouched). */
static inline int csp_str_to_int(csp_str value, long long min, long long max, long long *out) {
    if (!value.data || value.size == 0 || value.size > 20) return -1;
    size_t i = 0;
    const int negative = value.data[0] == '-';
    if (negative && ++i == value.size) return -1;
    unsigned long long magnitude = 0;
    for (; i < value.size; ++i) {
        const char c = value.data[i];
        if (c < '0' || c > '9') return -1;
        if (magnitude > (18446744073709551615ull - (unsigned)(c - '0')) / 10) return -1;
        magnitude = magnitude * 10 + (unsigned)(c - '0');
    }
    long long result;
    if (negative) {
        if (magnitude > 9223372036854775808ull) return -1;
        result = magnitude == 9223372036854775808ull ? (-9223372036854775807ll - 1) : -(long long)magnitude;
    } else {
        if (magnitude > 9223372036854775807ull) return -1;
        result = (long long)magnitude;
    }
    if (result < min || result > max) return -1;
    *out = result;
    return 0;
}

/* The form argument `name` (csp_form_arg) as an integer in [min, max], or `fallback` when it is
 * absent, malformed or out of range. */
static inline long long csp_form_int(const csp_request *req, const char *name, long long min, long long max,
                                     long long fallback) {
    long long value = fallback;
    return csp_str_to_int(csp_form_arg(req, name), min, max, &value) == 0 ? value : fallback;
}

/* `s` equals the NUL-terminated `text`. */
static inline int csp_str_is(csp_str s, const char *text) {
    const size_t n = strlen(text);
    return s.data && s.size == n && memcmp(s.data, text, n) == 0;
}

#ifdef __cplusplus
}
#endif

#endif /* CSP_TEXT_H */
