// libFuzzer target: bytes in -> parse -> route -> handler -> serialized response,
// with no sockets. Every input is fed twice: whole, and cut in two at a place the
// input chooses, so both the in-place and the copied parse paths are exercised.
#include "http/http1_response.hpp"
#include "handler/loader.hpp"
#include "http/parser.hpp"
#include "routing/router.hpp"

#include <spdlog/spdlog.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

namespace {

constexpr std::string_view kSecret = "outside-www-7f3a9c";

struct Harness final : cspd::RequestSink {
    std::string_view input;  // the input being run
    std::filesystem::path dir;
    std::unique_ptr<cspd::HandlerLoader> loader;
    cspd::HandlerTable table;
    std::unique_ptr<cspd::StaticFiles> www;
    cspd::DateCache date;
    std::unique_ptr<cspd::Router> router;
    std::string out;

    Harness() {
        spdlog::set_level(spdlog::level::off);  // throwing handlers would log on every input
        char pattern[] = "/tmp/cspd-fuzz-XXXXXX";
        dir = ::mkdtemp(pattern);
        std::filesystem::create_directories(dir / "www" / "sub");
        std::ofstream(dir / "www" / "index.html") << "<p>index</p>";
        std::ofstream(dir / "www" / "sub" / "a.txt") << "a";
        std::ofstream(dir / "secret") << kSecret;
        std::filesystem::create_symlink(dir / "secret", dir / "www" / "escape");
        www = std::make_unique<cspd::StaticFiles>(dir / "www");
        loader = std::make_unique<cspd::HandlerLoader>(dir);
        for (const char* name : {"hello", "echo", "status", "throwing"}) {
            std::filesystem::path file = std::string(CSPD_FUZZ_HANDLERS_DIR) + "/" + name + ".so";
            if (!std::filesystem::exists(file)) file = std::string(CSPD_HANDLERS_DIR) + "/" + name + ".so";
            auto loaded = loader->load(name, file);
            if (loaded.version) table.set(name, loaded.version);
        }
        router = std::make_unique<cspd::Router>(table, *www);
    }

    cspd::SinkAction on_request(const cspd::HttpRequest& request) override {
        cspd::Http1Writer writer(out, date);
        cspd::Routed routed = router->respond(request, {cspd::ClientInfo{"127.0.0.1", 1}, request.keep_alive}, writer);
        if (routed.body_file.is_open()) cspd::StaticFiles::read_into(routed.body_file, out);
        // A response must never carry the file outside www/ -- unless the request itself held the
        // marker and a handler echoed it back.
        if (out.find(kSecret) != std::string::npos && input.find(kSecret) == std::string_view::npos) std::abort();
        if (out.size() > (1u << 20)) out.clear();
        return request.keep_alive ? cspd::SinkAction::proceed : cspd::SinkAction::stop;
    }
};

Harness& harness() {
    static Harness h;
    return h;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    Harness& h = harness();
    std::string_view input(reinterpret_cast<const char*>(data), size);
    h.input = input;
    {
        cspd::HttpParser parser(cspd::ParseLimits{4096, 64 * 1024, 0, {}});
        h.out.clear();
        parser.feed(input, h);
    }
    if (size > 1) {
        const std::size_t cut = data[0] % size;
        cspd::HttpParser parser(cspd::ParseLimits{4096, 64 * 1024, 0, {}});
        h.out.clear();
        std::string first(input.substr(0, cut));
        if (parser.feed(first, h) == cspd::HttpParser::Status::ok) {
            first.assign(first.size(), '\xAA');  // the buffer is reused before the rest arrives
            std::string rest(input.substr(cut));
            parser.feed(rest, h);
        }
    }
    return 0;
}
