#include "handler/installer.hpp"

#include "handler/kept_versions.hpp"
#include "handler/loader.hpp"
#include "handler/registry.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <spdlog/spdlog.h>

namespace cspd {
namespace asio = boost::asio;
using namespace std::chrono_literals;

namespace {
// How often live versions are checked for a quarantine to roll back from. Requests do not wait
// for it: a loop serves the fallback of a quarantined version by itself.
constexpr auto kRollbackCheck = 100ms;

bool same_version(const HandlerVersion& a, const HandlerVersion& b) {
    return a.file().content_hash == b.file().content_hash && a.file().size == b.file().size;
}
}  // namespace

struct HandlerInstaller::Impl {
    Impl(asio::io_context& io_context, HandlerLoader& handler_loader, HandlerRegistry& handler_registry,
         InstallerOptions installer_options)
        : io(io_context), loader(handler_loader), registry(handler_registry), options(std::move(installer_options)),
          rollback_check(io_context) {}

    asio::io_context& io;
    HandlerLoader& loader;
    HandlerRegistry& registry;
    InstallerOptions options;
    asio::steady_timer rollback_check;
    std::map<std::string, std::unique_ptr<asio::steady_timer>> probation;  // of versions with a fallback
    bool stopped = false;

    bool rolls_back() const { return static_cast<bool>(options.quarantined); }
    bool quarantined(const HandlerVersion& version) const { return options.quarantined(version.name(), version.file()); }

    void start() {
        if (rolls_back()) check_rollbacks();
    }

    void stop() {
        stopped = true;
        rollback_check.cancel();
        probation.clear();
    }

    void install(std::shared_ptr<HandlerVersion> version, const PreparedVersion* prepared) {
        const std::string name = version->name();
        const auto live = registry.current(name);
        if (options.kept && prepared) options.kept->keep(*version, *prepared);
        std::shared_ptr<const HandlerVersion> fallback = fallback_for(name, *version, live);
        if (fallback && quarantined(*version)) {
            // Quarantined already (this worker started after it crashed elsewhere): serve what it replaced.
            spdlog::warn("handler {}: {} is quarantined; serving {} instead (rolled back)", name, version->describe(),
                         fallback->describe());
            if (options.kept) options.kept->set_serving(name, fallback.get());
            registry.install(std::move(fallback));
            return;
        }
        if (options.kept) {
            options.kept->set_serving(name, version.get());
            if (fallback && fallback == live) options.kept->set_good(name, live.get());
        }
        const bool on_probation = fallback != nullptr;
        registry.install(version, std::move(fallback));
        // Said once every loop has been handed the version (their next turn installs it), not
        // before: whoever waits for this line to send a request must not meet a 404.
        if (rolls_back() && quarantined(*version))
            spdlog::warn("handler {}: {} is quarantined, with no version to roll back to: /csp/{} answers 503 "
                         "until a new version of {}.so is dropped in",
                         name, version->describe(), name, name);
        else
            spdlog::info("handler {}: {} {}", name, live ? "reloaded as" : "loaded", version->describe());
        if (on_probation) start_probation(name, version);
    }

    /// What serves `name` if `version` is quarantined: the version it replaces if that one is not
    /// quarantined, else that one's own fallback; in a worker with nothing live yet, the last good
    /// version the server kept.
    std::shared_ptr<const HandlerVersion> fallback_for(const std::string& name, const HandlerVersion& version,
                                                       const std::shared_ptr<const HandlerVersion>& live) {
        if (!rolls_back()) return nullptr;
        std::shared_ptr<const HandlerVersion> fallback;
        if (live)
            fallback = quarantined(*live) ? registry.fallback(name) : live;
        else if (options.kept)
            fallback = load_kept(name, options.kept->good(name));
        if (fallback && (same_version(*fallback, version) || quarantined(*fallback))) return nullptr;
        return fallback;
    }

    std::shared_ptr<const HandlerVersion> load_kept(const std::string& name, const std::optional<KeptVersion>& kept) {
        if (!kept) return nullptr;
        // The server folder is written by workers, which run handler code: the bytes must still be
        // those that were kept (their hash), or nothing of them runs.
        PreparedVersion prepared;
        LoadResult result = loader.prepare(name, kept->library, kept->config_folder, prepared);
        if (result.error == LoadError::none && (prepared.identity().content_hash != kept->content_hash ||
                                                prepared.identity().size != kept->size)) {
            spdlog::error("handler {}: the version kept as {} has changed on disk since it was kept; not loaded", name,
                          kept->id);
            return nullptr;
        }
        if (result.error == LoadError::none) result = loader.open(prepared);
        if (!result.version) {
            spdlog::warn("handler {}: cannot load the version kept as {}: {}", name, kept->id, result.reason);
            return nullptr;
        }
        return std::move(result.version);
    }

    /// Once `version` has served the probation without being quarantined, the one it replaced goes.
    void start_probation(const std::string& name, const std::shared_ptr<const HandlerVersion>& version) {
        auto& timer = probation[name];
        timer = std::make_unique<asio::steady_timer>(io);
        timer->expires_after(options.probation);
        timer->async_wait([this, name, weak = std::weak_ptr<const HandlerVersion>(version)](boost::system::error_code ec) {
            if (ec || stopped) return;
            const auto live = registry.current(name);
            if (!live || live != weak.lock() || quarantined(*live)) return;
            probation.erase(name);
            spdlog::debug("handler {}: {} served {} s unquarantined; the version it replaced is let go", name,
                          live->describe(), options.probation.count());
            if (options.kept) options.kept->set_good(name, nullptr);
            registry.set_fallback(name, nullptr);
        });
    }

    void check_rollbacks() {
        for (const auto& name : registry.names()) {
            const auto live = registry.current(name);
            if (!live || !quarantined(*live)) continue;
            auto fallback = registry.fallback(name);
            if (!fallback || quarantined(*fallback)) continue;
            spdlog::warn("handler {}: {} is quarantined; rolled back to {}", name, live->describe(),
                         fallback->describe());
            probation.erase(name);
            if (options.kept) options.kept->set_serving(name, fallback.get());
            registry.install(std::move(fallback));
        }
        rollback_check.expires_after(kRollbackCheck);
        rollback_check.async_wait([this](boost::system::error_code ec) {
            if (!ec && !stopped) check_rollbacks();
        });
    }

    void removed(const std::string& name) {
        probation.erase(name);
        if (options.kept) {
            options.kept->set_serving(name, nullptr);
            options.kept->set_good(name, nullptr);
        }
        registry.remove(name);
    }

    void refused(const std::string& name, const std::filesystem::path& file, const std::string& reason) {
        const auto live = registry.current(name);
        if (live) {
            spdlog::error("handler {}: refused {}: {}; {} keeps serving", name, file.string(), reason, live->describe());
            registry.refused(name, reason);
            return;
        }
        spdlog::error("handler {}: refused {}: {}", name, file.string(), reason);
        registry.refused(name, reason);
        // A worker that starts while the file is refused serves what the others served before it.
        serve_kept(name, "the version the server kept from before this worker started");
    }

    void vetting_meanwhile(const std::string& name) {
        if (registry.current(name)) return;
        if (!serve_kept(name, "the version the others serve, while the new file is vetted"))
            spdlog::info("handler {}: its file is being vetted; /csp/{} is served once it passes", name, name);
    }

    /// Installs the version the server kept serving for `name`, unless quarantined; false if none.
    bool serve_kept(const std::string& name, const char* why) {
        if (!options.kept) return false;
        auto version = load_kept(name, options.kept->serving(name));
        if (!version || (rolls_back() && quarantined(*version))) return false;
        spdlog::warn("handler {}: serving {}, {}", name, version->describe(), why);
        registry.install(std::move(version));
        return true;
    }
};

HandlerInstaller::HandlerInstaller(asio::io_context& io, HandlerLoader& loader, HandlerRegistry& registry,
                                   InstallerOptions options)
    : impl_(std::make_unique<Impl>(io, loader, registry, std::move(options))) {}

HandlerInstaller::~HandlerInstaller() = default;

void HandlerInstaller::start() { impl_->start(); }
void HandlerInstaller::stop() { impl_->stop(); }

void HandlerInstaller::install(std::shared_ptr<HandlerVersion> version, const PreparedVersion* prepared) {
    impl_->install(std::move(version), prepared);
}

void HandlerInstaller::removed(const std::string& name) { impl_->removed(name); }
void HandlerInstaller::vetting_meanwhile(const std::string& name) { impl_->vetting_meanwhile(name); }

void HandlerInstaller::refused(const std::string& name, const std::filesystem::path& file, const std::string& reason) {
    impl_->refused(name, file, reason);
}

}  // namespace cspd
