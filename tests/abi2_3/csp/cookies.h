/* cspd handler SDK: a Set-Cookie builder that refuses what browsers would misread, inline so it
 * costs no ABI (included by csp/csp.h). Read cookies with csp_cookie (csp.h).
 *
 *   csp_cookie_options o = {0};
 *   o.path = "/"; o.http_only = 1; o.secure = 1; o.same_site = "Lax"; o.max_age = 3600;
 *   if (csp_reply_set_cookie(reply, "session", token, &o) != 0) return 500;
 */
#ifndef CSP_COOKIES_H
#define CSP_COOKIES_H

#include <csp/csp.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct csp_cookie_options {
    const char *path;      /* NULL: none (the browser uses the request's folder) */
    const char *domain;    /* NULL: this host only */
    long long max_age;     /* > 0: Max-Age in seconds; 0: none (a session cookie); < 0: Max-Age=0 (remove it) */
    int secure;            /* sent over HTTPS only */
    int http_only;         /* hidden from scripts */
    const char *same_site; /* "Strict", "Lax" or "None" (which needs `secure`); NULL: none */
} csp_cookie_options;

/* A cookie name is an RFC 9110 token. */
static inline int csp_cookie_name_ok(const char *name) {
    if (!*name) return 0;
    for (const char *p = name; *p; ++p) {
        const unsigned char c = (unsigned char)*p;
        if (c <= 0x20 || c >= 0x7f || strchr("()<>@,;:\\\"/[]?={}", c)) return 0;
    }
    return 1;
}

/* A value is cookie-octets (RFC 6265 §4.1.1: no space, DQUOTE, comma, semicolon or backslash),
 * possibly empty; encode anything else yourself (csp_reply_url_encode's alphabet is safe). */
static inline int csp_cookie_value_ok(const char *value) {
    for (const char *p = value; *p; ++p) {
        const unsigned char c = (unsigned char)*p;
        if (c <= 0x20 || c >= 0x7f || c == '"' || c == ',' || c == ';' || c == '\\') return 0;
    }
    return 1;
}

/* Path: visible characters but ';'. Domain: letters, digits, '-' and '.'. */
static inline int csp_cookie_attribute_ok(const char *text, int domain) {
    if (!*text) return 0;
    for (const char *p = text; *p; ++p) {
        const unsigned char c = (unsigned char)*p;
        if (domain ? !((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
                       c == '.')
                   : (c < 0x20 || c >= 0x7f || c == ';'))
            return 0;
    }
    return 1;
}

/* Browsers match the "__Secure-" and "__Host-" prefixes whatever their case (RFC 6265bis). */
static inline int csp_cookie_has_prefix_(const char *name, const char *prefix) {
    for (; *prefix; ++name, ++prefix) {
        const char c = (*name >= 'A' && *name <= 'Z') ? (char)(*name - 'A' + 'a') : *name;
        const char p = (*prefix >= 'A' && *prefix <= 'Z') ? (char)(*prefix - 'A' + 'a') : *prefix;
        if (c != p) return 0;
    }
    return 1;
}

/* Adds one Set-Cookie header. 0, or -1 for an invalid name, value or attribute, SameSite=None
 * without Secure, a "__Secure-" name without Secure, or a "__Host-" name without Secure, with a
 * Domain, or with a Path other than "/" (RFC 6265bis prefixes). `options` may be NULL. */
static inline int csp_reply_set_cookie(csp_reply *reply, const char *name, const char *value,
                                       const csp_cookie_options *options) {
    static const csp_cookie_options none = {NULL, NULL, 0, 0, 0, NULL};
    const csp_cookie_options *o = options ? options : &none;
    if (!csp_cookie_name_ok(name) || !csp_cookie_value_ok(value)) return -1;
    if (o->path && !csp_cookie_attribute_ok(o->path, 0)) return -1;
    if (o->domain && !csp_cookie_attribute_ok(o->domain, 1)) return -1;
    if (o->same_site && strcmp(o->same_site, "Strict") != 0 && strcmp(o->same_site, "Lax") != 0 &&
        strcmp(o->same_site, "None") != 0)
        return -1;
    if (o->same_site && strcmp(o->same_site, "None") == 0 && !o->secure) return -1;
    if (csp_cookie_has_prefix_(name, "__Secure-") && !o->secure) return -1;
    if (csp_cookie_has_prefix_(name, "__Host-") && (!o->secure || o->domain || !o->path || strcmp(o->path, "/") != 0))
        return -1;

    char line[4096];
    int n = snprintf(line, sizeof line, "%s=%s", name, value);
    if (n < 0 || (size_t)n >= sizeof line) return -1;
    size_t size = (size_t)n;
#define CSP_COOKIE_ADD_(...)                                                         \
    do {                                                                             \
        const int added = snprintf(line + size, sizeof line - size, __VA_ARGS__);    \
        if (added < 0 || (size_t)added >= sizeof line - size) return -1;             \
        size += (size_t)added;                                                       \
    } while (0)
    if (o->path) CSP_COOKIE_ADD_("; Path=%s", o->path);
    if (o->domain) CSP_COOKIE_ADD_("; Domain=%s", o->domain);
    if (o->max_age > 0) CSP_COOKIE_ADD_("; Max-Age=%lld", o->max_age);
    if (o->max_age < 0) CSP_COOKIE_ADD_("; Max-Age=0");
    if (o->secure) CSP_COOKIE_ADD_("; Secure");
    if (o->http_only) CSP_COOKIE_ADD_("; HttpOnly");
    if (o->same_site) CSP_COOKIE_ADD_("; SameSite=%s", o->same_site);
#undef CSP_COOKIE_ADD_
    return reply->api->reply_add_header(reply, "Set-Cookie", 10, line, size);
}

/* Asks the browser to drop cookie `name` (set with this `path`, which may be NULL). */
static inline int csp_reply_clear_cookie(csp_reply *reply, const char *name, const char *path) {
    /* A prefixed name ("__Secure-", "__Host-") is only accepted, and so only removed, with Secure. */
    csp_cookie_options o = {path, NULL, -1, strncmp(name, "__", 2) == 0, 0, NULL};
    return csp_reply_set_cookie(reply, name, "", &o);
}

#ifdef __cplusplus
}
#endif

#endif /* CSP_COOKIES_H */
