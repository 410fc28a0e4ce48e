// GET /csp/greet?name=Eva -> "Hello, Eva!"
// The greeting comes from the handler's configuration, greet.conf beside greet.so
// ("greeting = Howdy"; SDK 2.2), read by an init that is told its context; each answer is kept
// in the reply cache for 10 s, so a popular name is answered without calling the handler.
#include <csp/csp.hpp>

#include <chrono>
#include <string>

namespace {

struct settings {
    std::string greeting;
};

int init(const csp_init_context* raw_context, void** state) {
    const csp::init_context context(raw_context);
    *state = new settings{std::string(context.config("greeting").value_or("Hello"))};
    return 0;
}

void cleanup(void* state) { delete static_cast<settings*>(state); }

int greet(const csp::request& request, csp::reply& reply) {
    using namespace std::chrono_literals;
    reply.content_type("text/plain; charset=utf-8");
    const std::string& greeting = request.state<settings>()->greeting;
    auto name = request.query_arg("name");
    if (!name || name->empty()) {
        reply << greeting << ", stranger! Try ?name=Eva\n";
        return 200;
    }
    reply << greeting << ", " << *name << "!\n";
    reply.cache(10s);
    return 200;
}

}  // namespace

CSP_CPP_HANDLER_WITH_CONTEXT(greet, init, cleanup)
