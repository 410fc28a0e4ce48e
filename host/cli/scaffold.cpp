#include "cli/scaffold.hpp"

#include "handler/handler_name.hpp"

#include <fstream>
#include <stdexcept>

namespace cspd {
namespace {

std::string c_skeleton(const std::string& name) {
    return R"(/* )" + name + R"(: answers GET /csp/)" + name + R"(?name=... -- build and drop it in:
 *   cc -O2 -shared -fPIC $(pkg-config --cflags cspd-sdk) )" +
           name + R"(.c -o )" + name + R"(.so
 *   cp )" +
           name + R"(.so /path/to/handlers/
 */
#include <csp/csp.h>

static int handle(const csp_request *req, csp_reply *reply) {
    csp_str who = csp_query_arg(req, "name");
    csp_reply_set_content_type(reply, "text/plain; charset=utf-8");
    if (who.data)
        csp_reply_printf(reply, "Hello, %.*s, from )" +
           name + R"(!\n", (int)who.size, who.data);
    else
        csp_reply_puts(reply, "Hello from )" +
           name + R"(!\n");
    return 200;
}

CSP_HANDLER(handle)
)";
}

std::string cpp_skeleton(const std::string& name) {
    return R"(// )" + name + R"(: answers GET /csp/)" + name + R"(?name=... -- build and drop it in:
//   c++ -O2 -shared -fPIC $(pkg-config --cflags cspd-sdk) )" +
           name + R"(.cpp -o )" + name + R"(.so
//   cp )" +
           name + R"(.so /path/to/handlers/
#include <csp/csp.hpp>

static int handle(const csp::request& request, csp::reply& reply) {
    reply.content_type("text/plain; charset=utf-8");
    if (auto who = request.query_arg("name"))
        reply << "Hello, " << *who << ", from )" +
           name + R"(!\n";
    else
        reply << "Hello from )" +
           name + R"(!\n";
    return 200;
}

CSP_CPP_HANDLER(handle)
)";
}

}  // namespace

std::filesystem::path write_handler_skeleton(const std::string& name, const std::string& lang,
                                             const std::filesystem::path& folder) {
    if (!is_valid_handler_name(name))
        throw std::runtime_error("'" + name + "' is not a handler name: use letters, digits, '_' and '-'");
    if (lang != "c" && lang != "cpp") throw std::runtime_error("--lang is c or cpp, not '" + lang + "'");
    const std::filesystem::path file = folder / (name + "." + lang);
    if (std::filesystem::exists(file)) throw std::runtime_error(file.string() + " exists already; not overwriting it");
    std::ofstream out(file);
    if (!out) throw std::runtime_error("cannot write " + file.string());
    out << (lang == "c" ? c_skeleton(name) : cpp_skeleton(name));
    if (!out.flush()) throw std::runtime_error("cannot write " + file.string());
    return file;
}

}  // namespace cspd
