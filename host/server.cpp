#include "server.hpp"

#include "event_loop.hpp"
#include "handler_compiler.hpp"
#include "handler_loader.hpp"
#include "handler_registry.hpp"
#include "handler_watcher.hpp"
#include "static_files.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdlib>
#include <thread>

namespace cspd {
namespace asio = boost::asio;

namespace {
std::filesystem::path scratch_parent() {
    const char* tmp = std::getenv("TMPDIR");
    return tmp && *tmp ? tmp : "/tmp";
}
} // namespace

Server::Server(Config config) : config_(std::move(config)) {
    if (config_.workers == 0) config_.workers = std::max(1u, std::thread::hardware_concurrency());
}

int Server::run() {
    if (!std::filesystem::is_directory(config_.handlers_dir))
        throw std::runtime_error("handlers folder " + config_.handlers_dir.string() + " is not a folder");
    StaticFiles www(config_.www_dir);
    const asio::ip::address address = asio::ip::make_address(config_.bind_address);

    std::vector<std::unique_ptr<EventLoop>> loops;
    unsigned short port = config_.port;
    for (unsigned i = 0; i < config_.workers; ++i) {
        loops.push_back(std::make_unique<EventLoop>(i, config_, www));
        // With --port 0 the first loop learns the port; the others join it.
        port = loops.back()->listen(address, port);
    }

    asio::io_context control;
    // Installed before the first (possibly slow) handler load, so an early SIGTERM still drains.
    asio::signal_set signals(control, SIGINT, SIGTERM);
    HandlerLoader loader(scratch_parent(), config_.strict_handler_modes);
    HandlerRegistry registry;
    for (auto& loop : loops) {
        EventLoop* target = loop.get();
        registry.subscribe([target](const std::string& name, std::shared_ptr<const HandlerVersion> version) {
            target->post([target, name, version = std::move(version)]() mutable {
                target->handlers().set(name, std::move(version));
            });
        });
    }
    std::unique_ptr<HandlerCompiler> compiler;
    WatcherOptions watch;
    if (config_.compile_sources) {
        auto include = config_.sdk_include.empty() ? HandlerCompiler::default_sdk_include() : config_.sdk_include;
        compiler = std::make_unique<HandlerCompiler>(include, loader.scratch_dir(),
                                                     std::chrono::seconds(config_.compile_timeout_s));
        watch.compiler = compiler.get();
        watch.dev_diagnostics = config_.dev;
        spdlog::info("--compile: NAME.c and NAME.cpp are compiled against {}{}", include.string(),
                     config_.dev ? "; --dev: compile errors are served as 500" : "");
    }
    HandlerWatcher watcher(control, config_.handlers_dir, loader, registry, watch);
    watcher.start();

    std::vector<std::thread> threads;
    for (auto& loop : loops) threads.emplace_back([&loop] { loop->run(); });
    spdlog::info("cspd listening on {}:{} with {} event loop(s); handlers from {}, static files from {}",
                 config_.bind_address, port, loops.size(), config_.handlers_dir.string(), config_.www_dir.string());

    asio::steady_timer drain_deadline(control);
    bool stopping = false;
    signals.async_wait([&](boost::system::error_code ec, int signal) {
        if (ec) return;
        stopping = true;
        spdlog::info("signal {}: draining (up to {} s)", signal, config_.drain_timeout_s);
        for (auto& loop : loops) loop->begin_drain();  // first: stopping the watcher may wait for a compiler
        watcher.stop();
        drain_deadline.expires_after(std::chrono::seconds(config_.drain_timeout_s));
        drain_deadline.async_wait([&](boost::system::error_code timer_ec) {
            if (timer_ec) return;
            spdlog::warn("drain timeout: closing the remaining connections");
            for (auto& loop : loops) loop->stop();
        });
    });
    // The watcher's events and the signal share this thread.
    while (!stopping && control.run_one() > 0) {
    }
    std::thread deadline_thread([&control] { control.run(); });
    for (auto& thread : threads) thread.join();
    control.stop();
    deadline_thread.join();

    registry.clear();
    loops.clear();  // drops the last references: cleanup hooks run, libraries unload
    spdlog::info("cspd stopped");
    return 0;
}

} // namespace cspd
