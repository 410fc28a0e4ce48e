// GET /csp/greet?name=Eva -> "Hello, Eva!"
#include <csp/csp.hpp>

#include <string>

static int greet(const csp_request* raw_request, csp_reply* raw_reply) {
    csp::request request(raw_request);
    csp::reply reply(raw_reply);
    reply.content_type("text/plain; charset=utf-8");
    auto name = request.query_arg("name");
    if (!name || name->empty()) {
        reply << "Hello, stranger! Try ?name=Eva\n";
        return 200;
    }
    reply << "Hello, " << *name << "!\n";
    return 200;
}

CSP_HANDLER(greet)
