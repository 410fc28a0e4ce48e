#include "process/handler_supply.hpp"

#include "common/clocks.hpp"
#include "common/crash_context.hpp"
#include "handler/compiler.hpp"
#include "handler/kept_versions.hpp"
#include "handler/loader.hpp"
#include "handler/private_folders.hpp"
#include "handler/registry.hpp"
#include "handler/watcher.hpp"
#include "process/handler_vetting.hpp"
#include "serving/event_loop.hpp"
#include "stats/quarantine_list.hpp"
#include "stats/shared_stats.hpp"

#include <spdlog/spdlog.h>

namespace cspd {

struct HandlerSupply::Parts {
    Parts(boost::asio::io_context& control, const Config& config, const std::optional<WorkerRole>& role,
          SharedStats& stats, const std::filesystem::path& private_folder)
        : loader(CopiesInto{private_folder}, config.strict_handler_modes),
          // Each new version is tried in a short-lived process before this one loads it (unless
          // --no-vetting), and none the master has fenced is loaded.
          vetting(control, std::chrono::seconds(config.init_timeout_s), &stats, config.vet_handlers,
                  std::max(1u, config.workers), role ? config.server_folder : std::filesystem::path()),
          // Under a master, versions are kept for workers that restart, and a quarantined one rolls back.
          kept(role ? config.server_folder : std::filesystem::path()) {}

    HandlerLoader loader;
    HandlerVetting vetting;
    HandlerRegistry registry;
    std::unique_ptr<HandlerCompiler> compiler;
    const KeptVersions kept;
    std::optional<HandlerWatcher> watcher;
};

namespace {
/// The master times loads and inits (--init-timeout): one that passed vetting may still hang here.
void report_loading_phases(HandlerLoader& loader, LoopSlot& first) {
    loader.on_phase([&first](HandlerPhase phase, const HandlerLabel& label) {
        if (phase == HandlerPhase::none) {
            first.loading_since_ns.store(0, std::memory_order_release);
            return;
        }
        first.loading_since_ns.store(0, std::memory_order_relaxed);
        copy_text(first.loading.name, sizeof first.loading.name, label.name);
        first.loading.size = label.size;
        first.loading.content_hash = label.content_hash;
        first.loading.phase.store(static_cast<std::uint32_t>(phase), std::memory_order_relaxed);
        first.loading_since_ns.store(monotonic_now_ns(), std::memory_order_release);
    });
}

/// Every loop hears of each install, refusal, fallback and vetting on its own thread.
void feed_loops(HandlerRegistry& registry, const std::vector<std::unique_ptr<EventLoop>>& loops) {
    for (const auto& loop : loops) {
        EventLoop* target = loop.get();
        const bool counts = loop == loops.front();  // one count per process, not per loop
        registry.subscribe([target, counts](const std::string& name, std::shared_ptr<const HandlerVersion> version) {
            target->post([target, name, counts, version = std::move(version)]() mutable {
                target->set_handler(name, std::move(version), counts);
            });
        });
        registry.subscribe_refusals([target, counts](const std::string& name, const std::string& reason) {
            target->post([target, name, reason, counts] { target->handlers().note_refusal(name, reason, counts); });
        });
        registry.subscribe_fallbacks([target](const std::string& name, std::shared_ptr<const HandlerVersion> fallback) {
            target->post([target, name, fallback = std::move(fallback)]() mutable {
                target->handlers().set_fallback(name, std::move(fallback));
            });
        });
        registry.subscribe_vetting([target](const std::string& name, bool started) {
            target->post([target, name, started] { target->handlers().note_vetting(name, started); });
        });
    }
}
}  // namespace

HandlerSupply::HandlerSupply(boost::asio::io_context& control, const Config& config,
                             const std::optional<WorkerRole>& role, SharedStats& stats, unsigned first_slot,
                             const std::vector<std::unique_ptr<EventLoop>>& loops,
                             const std::filesystem::path& private_folder, Refuses refuses)
    : parts_(std::make_unique<Parts>(control, config, role, stats, private_folder)) {
    Parts& p = *parts_;
    p.loader.set_worker(role ? role->index : 0, std::max(1u, config.workers));
    report_loading_phases(p.loader, stats.slots[first_slot]);
    feed_loops(p.registry, loops);
    WatcherOptions watch;
    watch.gate = &p.vetting;
    watch.refuses = std::move(refuses);
    if (p.kept.enabled()) watch.install.kept = &p.kept;
    if (role && config.rollback)
        watch.install.quarantined = [&stats](const std::string& name, const HandlerFileIdentity& file) {
            return is_quarantined(stats, name, file.size, file.content_hash);
        };
    watch.install.probation = std::chrono::seconds(config.quarantine_window_s);
    if (config.compile_sources) {
        auto include = config.sdk_include.empty() ? HandlerCompiler::default_sdk_include() : config.sdk_include;
        p.compiler = std::make_unique<HandlerCompiler>(include, p.loader.scratch_dir(),
                                                       std::chrono::seconds(config.compile_timeout_s),
                                                       role ? config.server_folder : std::filesystem::path());
        watch.compiler = p.compiler.get();
        watch.dev_diagnostics = config.dev;
        spdlog::info("--compile: NAME.c and NAME.cpp are compiled against {}{}", include.string(),
                     config.dev ? "; --dev: compile errors are served as 500" : "");
    }
    p.watcher.emplace(control, config.handlers_dir, p.loader, p.registry, std::move(watch));
}

HandlerSupply::~HandlerSupply() = default;

void HandlerSupply::start(std::function<void()> settled, bool wait_for_vetting) {
    parts_->watcher->start(std::move(settled), wait_for_vetting);
}
void HandlerSupply::rescan() { parts_->watcher->rescan(); }
void HandlerSupply::stop() { parts_->watcher->stop(); }
void HandlerSupply::clear() { parts_->registry.clear(); }
bool HandlerSupply::start_vetting(const std::string& call_filter, std::string& error) {
    return parts_->vetting.start_fork_server(call_filter, error);
}
void HandlerSupply::when_vetting_is_lost(std::function<std::string()> lost) {
    parts_->vetting.when_lost(std::move(lost));
}

}  // namespace cspd
