// GET /csp/session: reads a request header (Cookie) and sets a cookie in the reply.
#include <csp/csp.hpp>

#include <string>

static int session(const csp::request& request, csp::reply& reply) {
    reply.content_type("text/plain; charset=utf-8");
    auto cookie = request.header("Cookie");
    if (cookie && cookie->find("visited=yes") != std::string_view::npos) {
        reply << "welcome back\n";
    } else {
        reply.header("Set-Cookie", "visited=yes; Path=/; HttpOnly; SameSite=Lax");
        reply << "first visit: cookie set\n";
    }
    reply << "your user agent: " << request.header("User-Agent").value_or("(none)") << "\n";
    return 200;
}

CSP_CPP_HANDLER(session)
