// The request path without sockets: bytes in -> parse -> route -> handler ->
// serialized response, as a connection runs it. Regressions show here first.
#include "handler/loader.hpp"
#include "http/parser.hpp"
#include "routing/router.hpp"
#include "stats/shared_stats.hpp"

#include <benchmark/benchmark.h>

#include <filesystem>
#include <memory>
#include <string>

namespace {

struct Pipeline final : cspd::RequestSink {
    cspd::HandlerTable table;
    std::unique_ptr<cspd::StaticFiles> www;
    cspd::DateCache date;
    std::unique_ptr<cspd::Router> router;
    std::filesystem::path scratch = std::filesystem::temp_directory_path();
    cspd::HandlerLoader loader{scratch};
    cspd::SharedStatsMapping shared = cspd::SharedStatsMapping::create();
    std::string out;

    /// With `counters`, as the server runs: every response counted, handler calls timed.
    explicit Pipeline(bool counters) {
        www = std::make_unique<cspd::StaticFiles>(CSPD_SOURCE_DIR "/www");
        if (counters) table.attach_stats(shared.stats().slots[0]);
        for (const char* name : {"hello", "xpng"}) {
            auto loaded = loader.load(name, std::string(CSPD_HANDLERS_DIR "/") + name + ".so");
            if (!loaded.version) throw std::runtime_error(loaded.reason);
            table.set(name, loaded.version);
        }
        router = std::make_unique<cspd::Router>(table, *www, date);
        if (counters) router->attach_stats(shared.stats(), shared.stats().slots[0]);
    }

    cspd::SinkAction on_request(const cspd::HttpRequest& request) override {
        router->respond(request, {cspd::ClientInfo{"127.0.0.1", 40000}, true}, out);
        return cspd::SinkAction::proceed;
    }
};

Pipeline& pipeline(bool counters = true) {
    // Never destroyed: their handlers' unload logs would run after spdlog's statics are gone.
    static Pipeline& with = *new Pipeline(true);
    static Pipeline& without = *new Pipeline(false);
    return counters ? with : without;
}

void run(benchmark::State& state, const std::string& input, int requests_per_input, bool counters = true) {
    Pipeline& p = pipeline(counters);
    cspd::HttpParser parser;
    for (auto _ : state) {
        p.out.clear();
        parser.feed(input, p);
        benchmark::DoNotOptimize(p.out.data());
    }
    state.SetItemsProcessed(state.iterations() * requests_per_input);
}

const std::string kHello = "GET /csp/hello HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n";
const std::string kXpng = "GET /csp/xpng HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n";
const std::string kBrowser =
    "GET /csp/hello?name=Eva HTTP/1.1\r\nHost: example.com\r\nUser-Agent: Mozilla/5.0 (X11; Linux x86_64)\r\n"
    "Accept: text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8\r\nAccept-Language: en-US,en;q=0.5\r\n"
    "Accept-Encoding: gzip, deflate, br\r\nConnection: keep-alive\r\nCookie: session=abcdef0123456789\r\n\r\n";

std::string repeated(const std::string& one, int n) {
    std::string all;
    for (int i = 0; i < n; ++i) all += one;
    return all;
}

void BM_Hello(benchmark::State& state) { run(state, kHello, 1); }
void BM_Hello_NoCounters(benchmark::State& state) { run(state, kHello, 1, false); }
void BM_Xpng(benchmark::State& state) { run(state, kXpng, 1); }
void BM_BrowserLikeHello(benchmark::State& state) { run(state, kBrowser, 1); }
void BM_Hello_Pipelined16(benchmark::State& state) { run(state, repeated(kHello, 16), 16); }
void BM_StaticIndex(benchmark::State& state) { run(state, "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", 1); }

BENCHMARK(BM_Hello);
BENCHMARK(BM_Hello_NoCounters);  // what the shared counters and the watchdog's marks cost
BENCHMARK(BM_Xpng);
BENCHMARK(BM_BrowserLikeHello);
BENCHMARK(BM_Hello_Pipelined16);
BENCHMARK(BM_StaticIndex);

}  // namespace

BENCHMARK_MAIN();
