// /csp/guestbook: a guestbook, as a browser uses one.
//  GET   the page: the last 20 messages (HTML-escaped) and a form. A visitor without one gets a
//        session cookie (gb_session: a random token, HttpOnly, SameSite=Lax), which the form
//        carries too, in a hidden field.
//  POST  a message, from that form (multipart/form-data, with an optional file) or urlencoded:
//        the form's token must equal the cookie's (else 403) -- another site can make a browser
//        post here, with the cookie, but can neither read the page's token nor set the cookie
//        (double-submit CSRF protection) -- then 303 back to the page.
// Messages live in the store every worker shares, so all workers show the same book: a counter,
// and each message (name, text, attached file's name and size; the file's bytes are not kept),
// the last 20 only. A GET writes nothing there, so visitors cannot fill the store.
#include <csp/csp.hpp>

#include <sys/random.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

constexpr std::size_t kMaxName = 64, kMaxText = 500;
constexpr int kShown = 20;

std::string random_hex(std::size_t bytes) {
    unsigned char raw[32];
    if (bytes > sizeof raw || getrandom(raw, bytes, 0) != static_cast<ssize_t>(bytes)) return {};
    static constexpr char hex[] = "0123456789abcdef";
    std::string out;
    for (std::size_t i = 0; i < bytes; ++i) out += hex[raw[i] >> 4], out += hex[raw[i] & 15];
    return out;
}

bool is_hex(std::string_view s, std::size_t size) {
    if (s.size() != size) return false;
    for (char c : s)
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
    return true;
}

/// A message as stored: four lines (name, text, file name, file size); the text's line breaks as \r.
struct Message {
    std::string name, text, file;
    std::size_t file_size = 0;

    std::string encode() const {
        std::string t = text;
        for (char& c : t)
            if (c == '\n') c = '\r';
        return name + '\n' + t + '\n' + file + '\n' + std::to_string(file_size);
    }
    static Message decode(std::string_view s) {
        Message m;
        std::string* fields[] = {&m.name, &m.text, &m.file};
        for (std::string* f : fields) {
            const std::size_t nl = s.find('\n');
            f->assign(s.substr(0, nl));
            s = nl == std::string_view::npos ? std::string_view{} : s.substr(nl + 1);
        }
        m.file_size = std::strtoull(std::string(s).c_str(), nullptr, 10);
        for (char& c : m.text)
            if (c == '\r') c = '\n';
        return m;
    }
};

int page(const csp::request& req, csp::reply& rep) {
    std::string token(req.cookie("gb_session").value_or(""));
    if (!is_hex(token, 32)) {
        token = random_hex(16);
        if (token.empty()) {
            rep << "the guestbook cannot start a session now\n";
            return 503;
        }
        csp_cookie_options cookie{};
        cookie.path = "/csp/guestbook";
        cookie.http_only = 1;
        cookie.same_site = "Lax";
        cookie.max_age = 3600;
        rep.set_cookie("gb_session", token, cookie);
    }
    rep.header("Cache-Control", "no-store");
    rep << "<!doctype html><html><head><meta charset=\"utf-8\"><title>Guestbook</title></head><body>\n"
           "<h1>Guestbook</h1>\n<form method=\"post\" action=\"/csp/guestbook\" enctype=\"multipart/form-data\">\n"
           "<input type=\"hidden\" name=\"csrf\" value=\""
        << token
        << "\">\n<label>Name <input name=\"name\" maxlength=\"64\" required></label>\n"
           "<label>Message <textarea name=\"text\" maxlength=\"500\" required></textarea></label>\n"
           "<label>File <input type=\"file\" name=\"attachment\"></label>\n"
           "<button>Sign</button>\n</form>\n<ol class=\"messages\">\n";
    const std::int64_t last = std::strtoll(req.kv_get("guestbook:count").value_or("0").c_str(), nullptr, 10);
    for (std::int64_t n = last; n > 0 && n > last - kShown; --n) {
        const std::optional<std::string> stored = req.kv_get("guestbook:msg:" + std::to_string(n));
        if (!stored) continue;
        const Message m = Message::decode(*stored);
        rep << "<li><b>";
        rep.html(m.name) << "</b>: ";
        rep.html(m.text);
        if (!m.file.empty()) {
            rep << " <i>(attached ";
            rep.html(m.file) << ", " << std::to_string(m.file_size) << " bytes)</i>";
        }
        rep << "</li>\n";
    }
    rep << "</ol>\n</body></html>\n";
    return 200;
}

/// The form's fields, from a multipart body or an urlencoded one.
struct Form {
    std::string csrf, name, text, file;
    std::size_t file_size = 0;
    bool ok = true;
};

Form read_form(const csp::request& req) {
    Form form;
    csp::multipart parts(req.raw());
    if (!parts.is_multipart()) {
        form.csrf = req.form_arg("csrf").value_or("");
        form.name = req.form_arg("name").value_or("");
        form.text = req.form_arg("text").value_or("");
        return form;
    }
    for (const csp_part& part : parts) {
        const std::string_view name = csp::view(part.name), data = csp::view(part.data);
        if (name == "csrf") form.csrf = data;
        else if (name == "name") form.name = data;
        else if (name == "text") form.text = data;
        else if (name == "attachment" && part.filename.data && part.filename.size) {
            form.file = csp::view(part.filename).substr(0, 128);
            form.file_size = data.size();
        }
    }
    form.ok = parts.ok();
    return form;
}

int sign(const csp::request& req, csp::reply& rep) {
    rep.content_type("text/plain; charset=utf-8");
    const std::string session(req.cookie("gb_session").value_or(""));
    const Form form = read_form(req);
    if (!form.ok) return rep << "a malformed form\n", 400;
    // Another site can make a browser post here, with the cookie, but cannot know the token.
    if (!is_hex(session, 32) || form.csrf != session)
        return rep << "the form has expired or did not come from this site\n", 403;
    if (form.name.empty() || form.text.empty() || form.name.size() > kMaxName || form.text.size() > kMaxText ||
        form.name.find('\n') != std::string::npos || form.file.find('\n') != std::string::npos)
        return rep << "a name (up to 64 bytes, one line) and a message (up to 500 bytes) are needed\n", 400;
    const std::optional<std::int64_t> n = req.kv_add("guestbook:count", 1);
    const Message m{form.name, form.text, form.file, form.file_size};
    if (!n || req.kv_put("guestbook:msg:" + std::to_string(*n), m.encode()) != 0)
        return rep << "the guestbook is full\n", 507;
    // Older messages than the page shows are let go, so the book never fills the store.
    if (*n > kShown) req.kv_delete("guestbook:msg:" + std::to_string(*n - kShown));
    char line[128];
    std::snprintf(line, sizeof line, "message %lld signed by a %zu-byte name", static_cast<long long>(*n),
                  form.name.size());
    req.log(CSP_LOG_INFO, line);
    return rep.redirect(303, "/csp/guestbook");
}

int guestbook(const csp::request& req, csp::reply& rep) {
    if (req.method() == "GET" || req.method() == "HEAD") return page(req, rep);
    if (req.method() == "POST") return sign(req, rep);
    rep.header("Allow", "GET, HEAD, POST");
    return 405;
}

}  // namespace

CSP_CPP_HANDLER(guestbook)
