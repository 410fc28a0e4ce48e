/* cspd handler SDK: an iterator over the parts of a multipart/form-data body (RFC 7578), inline so
 * it costs no ABI (included by csp/csp.h). Every field of a part points into the request's body:
 * nothing is copied, and the parts are valid as long as the body is.
 *
 *   csp_multipart m;
 *   csp_part part;
 *   if (csp_multipart_begin(&m, req) != 0) return 415;
 *   int more;
 *   while ((more = csp_multipart_next(&m, &part)) == 1) ... part.name, part.filename, part.data ...
 *   if (more < 0) return 400;   malformed
 */
#ifndef CSP_MULTIPART_H
#define CSP_MULTIPART_H

#include <csp/csp.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct csp_part {
    csp_str name;         /* the Content-Disposition name, as sent between its quotes */
    csp_str filename;     /* the same for filename; .data == NULL for a field that is not a file */
    csp_str content_type; /* the part's Content-Type; .data == NULL when it has none (text/plain) */
    csp_str headers;      /* the part's raw header lines */
    csp_str data;         /* the part's bytes */
} csp_part;

typedef struct csp_multipart {
    const char *next, *end; /* what is left of the body */
    char delimiter[76];     /* CRLF "--" boundary */
    size_t delimiter_size;
    int state;              /* 0: before the first part, 1: between parts, 2: done, -1: malformed */
} csp_multipart;

/* Where `needle` first occurs in `size` bytes at `hay`, or NULL. */
static inline const char *csp_find_bytes_(const char *hay, size_t size, const char *needle, size_t needle_size) {
    if (needle_size == 0 || size < needle_size) return NULL;
    const char *last = hay + (size - needle_size);
    for (const char *p = hay; p <= last; ++p) {
        p = (const char *)memchr(p, needle[0], (size_t)(last - p) + 1);
        if (!p) return NULL;
        if (memcmp(p, needle, needle_size) == 0) return p;
    }
    return NULL;
}

static inline int csp_ascii_iequal_(const char *a, const char *b, size_t n) {
    for (size_t i = 0; i < n; ++i) {
        char x = a[i], y = b[i];
        if (x >= 'A' && x <= 'Z') x = (char)(x - 'A' + 'a');
        if (y >= 'A' && y <= 'Z') y = (char)(y - 'A' + 'a');
        if (x != y) return 0;
    }
    return 1;
}

/* Finds parameter `name` in "type; a=1; b="two"" (from `p` to `end`): its value without quotes. */
static inline csp_str csp_header_param_(const char *p, const char *end, const char *name) {
    const size_t name_size = strlen(name);
    csp_str absent = {NULL, 0};
    while (p < end) {
        while (p < end && *p != ';') {  /* to the next ';' outside quotes */
            if (*p == '"') {
                for (++p; p < end && *p != '"'; ++p)
                    if (*p == '\\' && p + 1 < end) ++p;
            }
            if (p < end) ++p;
        }
        if (p >= end) return absent;
        ++p;
        while (p < end && (*p == ' ' || *p == '\t')) ++p;
        const char *key = p;
        while (p < end && *p != '=' && *p != ';') ++p;
        const char *key_end = p;
        while (key_end > key && (key_end[-1] == ' ' || key_end[-1] == '\t')) --key_end;
        if (p >= end || *p != '=') continue;
        ++p;
        while (p < end && (*p == ' ' || *p == '\t')) ++p;
        csp_str value = {p, 0};
        if (p < end && *p == '"') {
            value.data = ++p;
            while (p < end && *p != '"') p += (*p == '\\' && p + 1 < end) ? 2 : 1;
            if (p > end) p = end;
            value.size = (size_t)(p - value.data);
            if (p < end) ++p; /* the closing quote */
        } else {
            while (p < end && *p != ';' && *p != ' ' && *p != '\t') ++p;
            value.size = (size_t)(p - value.data);
        }
        if ((size_t)(key_end - key) == name_size && csp_ascii_iequal_(key, name, name_size)) return value;
    }
    return absent;
}

/* Starts iterating `body`, sent with Content-Type `content_type`. 0, or -1 if that is not
 * multipart/form-data with a boundary of 1 to 70 characters. */
static inline int csp_multipart_init(csp_multipart *m, csp_str content_type, csp_str body) {
    static const char type[] = "multipart/form-data";
    m->state = -1;
    if (!content_type.data || content_type.size < sizeof type - 1 ||
        !csp_ascii_iequal_(content_type.data, type, sizeof type - 1))
        return -1;
    const char *rest = content_type.data + sizeof type - 1, *end = content_type.data + content_type.size;
    if (rest < end && *rest != ';' && *rest != ' ' && *rest != '\t') return -1;
    const csp_str boundary = csp_header_param_(rest, end, "boundary");
    if (!boundary.data || boundary.size == 0 || boundary.size > 70) return -1;
    memcpy(m->delimiter, "\r\n--", 4);
    memcpy(m->delimiter + 4, boundary.data, boundary.size);
    m->delimiter_size = boundary.size + 4;
    m->next = body.data ? body.data : "";
    m->end = m->next + body.size;
    m->state = 0;
    return 0;
}

/* The same for a request: its Content-Type header and its body. */
static inline int csp_multipart_begin(csp_multipart *m, const csp_request *req) {
    return csp_multipart_init(m, csp_header(req, "Content-Type"), req->body);
}

/* The next part into *part: 1; 0 after the last one; -1 if the body is malformed (and from then on). */
static inline int csp_multipart_next(csp_multipart *m, csp_part *part) {
    if (m->state < 0 || m->state == 2) return m->state < 0 ? -1 : 0;
    const char *p = m->next;
    if (m->state == 0) {
        /* The first delimiter may open the body without the CRLF before it; a preamble may come first. */
        const size_t dashes = m->delimiter_size - 2;
        if ((size_t)(m->end - p) >= dashes && memcmp(p, m->delimiter + 2, dashes) == 0) {
            p += dashes;
        } else {
            const char *found = csp_find_bytes_(p, (size_t)(m->end - p), m->delimiter, m->delimiter_size);
            if (!found) return m->state = -1;
            p = found + m->delimiter_size;
        }
        m->state = 1;
    }
    /* After a delimiter: "--" closes the body; else padding and CRLF, then the part's headers. */
    if (m->end - p >= 2 && p[0] == '-' && p[1] == '-') {
        m->state = 2;
        return 0;
    }
    while (p < m->end && (*p == ' ' || *p == '\t')) ++p;
    if (m->end - p < 2 || p[0] != '\r' || p[1] != '\n') return m->state = -1;
    p += 2;
    /* No header block at all: no disposition either (RFC 7578 §4.2). */
    if (m->end - p >= 2 && p[0] == '\r' && p[1] == '\n') return m->state = -1;
    const char *data_end = csp_find_bytes_(p, (size_t)(m->end - p), m->delimiter, m->delimiter_size);
    if (!data_end) return m->state = -1;
    /* The blank line is looked for before the delimiter only, so a part without one cannot take
     * the next part's headers for its own. Its second CRLF may be the delimiter's: no data. */
    const char *headers = p;
    const char *headers_end = csp_find_bytes_(p, (size_t)(data_end - p) + 2, "\r\n\r\n", 4);
    if (!headers_end) return m->state = -1;
    headers_end += 2; /* the last header's CRLF belongs to it */
    p = headers_end + 2 <= data_end ? headers_end + 2 : data_end;

    csp_part out = {{NULL, 0}, {NULL, 0}, {NULL, 0}, {headers, (size_t)(headers_end - headers)},
                    {p, (size_t)(data_end - p)}};
    int has_disposition = 0;
    for (const char *line = headers; line < headers_end;) {
        const char *line_end = csp_find_bytes_(line, (size_t)(headers_end - line), "\r\n", 2);
        if (!line_end) line_end = headers_end;
        const char *colon = (const char *)memchr(line, ':', (size_t)(line_end - line));
        if (colon) {
            const char *value = colon + 1;
            while (value < line_end && (*value == ' ' || *value == '\t')) ++value;
            const char *value_end = line_end;
            while (value_end > value && (value_end[-1] == ' ' || value_end[-1] == '\t')) --value_end;
            const size_t name_size = (size_t)(colon - line);
            if (name_size == 19 && csp_ascii_iequal_(line, "content-disposition", 19)) {
                if ((size_t)(value_end - value) < 9 || !csp_ascii_iequal_(value, "form-data", 9) ||
                    (value_end - value > 9 && value[9] != ';' && value[9] != ' ' && value[9] != '\t'))
                    return m->state = -1; /* not form-data, nor "form-dataX" */
                has_disposition = 1;
                out.name = csp_header_param_(value + 9, value_end, "name");
                out.filename = csp_header_param_(value + 9, value_end, "filename");
            } else if (name_size == 12 && csp_ascii_iequal_(line, "content-type", 12)) {
                out.content_type.data = value;
                out.content_type.size = (size_t)(value_end - value);
            }
        }
        line = line_end + 2;
    }
    /* RFC 7578 §4.2: every part has a form-data disposition with a name. */
    if (!has_disposition || !out.name.data) return m->state = -1;
    *part = out;
    m->next = data_end + m->delimiter_size;
    return 1;
}

#ifdef __cplusplus
}
#endif

#endif /* CSP_MULTIPART_H */
