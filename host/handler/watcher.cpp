#include "handler/watcher.hpp"

#include "handler/compile_jobs.hpp"
#include "handler/folder_events.hpp"
#include "handler/handler_name.hpp"
#include "handler/installer.hpp"
#include "handler/load_gate.hpp"
#include "handler/loader.hpp"
#include "handler/registry.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <spdlog/spdlog.h>

#include <sys/stat.h>

#include <map>
#include <set>

namespace cspd {
namespace asio = boost::asio;
using namespace std::chrono_literals;

namespace {
// Events for one name are gathered this long before acting: one load per burst.
constexpr auto kSettle = 10ms;
// A file that changed while being read, or looks cut short, is looked at again after this...
constexpr auto kRetry = 50ms;
// ...this many times before a short file is refused: a slow writer may still be at work.
constexpr int kMaxIncompleteRetries = 20;
}  // namespace

struct HandlerWatcher::Impl {
    Impl(asio::io_context& io_context, std::filesystem::path watched, HandlerLoader& handler_loader,
         HandlerRegistry& handler_registry, WatcherOptions watcher_options)
        : io(io_context), folder(std::move(watched)), loader(handler_loader), registry(handler_registry),
          options(watcher_options),
          installer(io_context, handler_loader, handler_registry, watcher_options.install),
          events(io_context, folder, {[this](const std::string& file, std::uint32_t mask) { on_event(file, mask); },
                                      [this] { rescan(); }}) {
        if (options.compiler) jobs = std::make_unique<CompileJobs>(io_context, *options.compiler);
    }

    ~Impl() { stop(); }

    asio::io_context& io;
    std::filesystem::path folder;
    HandlerLoader& loader;
    HandlerRegistry& registry;
    WatcherOptions options;
    HandlerInstaller installer;
    FolderEvents events;
    std::unique_ptr<CompileJobs> jobs;  // with --compile
    std::map<std::string, std::unique_ptr<asio::steady_timer>> pending;
    std::unique_ptr<asio::steady_timer> rescan_timer;
    // The file each live or refused name was last looked at in, so repeated events for an unchanged file do nothing.
    std::map<std::string, HandlerFileIdentity> seen;
    std::map<std::string, int> incomplete_retries;
    // The file each name's version now at the gate came from: a newer one supersedes it.
    std::map<std::string, HandlerFileIdentity> at_gate;
    std::function<void()> on_settled;  // until the first scan's versions are all in or refused
    bool stopped = false;

    void start(std::function<void()> settled, bool wait_for_vetting) {
        installer.start();
        events.start();
        rescan();
        if (!wait_for_vetting) {
            // What has a verdict already is in (the vetting gave it at once); a version still
            // being vetted, here or by another worker, is not waited for.
            for (const auto& [name, file] : at_gate) installer.vetting_meanwhile(name);
            if (settled) settled();
            return;
        }
        on_settled = std::move(settled);
        maybe_settled();
    }

    /// Once every version the first scan found has its verdict, says so (once).
    void maybe_settled() {
        if (on_settled && at_gate.empty()) std::exchange(on_settled, nullptr)();
    }

    void stop() {
        stopped = true;
        events.stop();
        pending.clear();
        rescan_timer.reset();
        if (jobs) jobs->stop();
        if (options.gate) options.gate->cancel_all();
        at_gate.clear();
        installer.stop();
    }

    void rescan() {
        std::set<std::string> names;
        std::error_code ec;
        for (const auto& entry : std::filesystem::directory_iterator(folder, ec)) {
            std::string name = handler_name_of_file(entry.path().filename().string(), options.compiler != nullptr);
            if (!name.empty()) names.insert(name);
        }
        if (ec) spdlog::error("cannot list handlers folder {}: {}", folder.string(), ec.message());
        for (const auto& name : registry.names()) names.insert(name);
        for (const auto& name : names) sync(name);
    }

    void on_event(const std::string& file, std::uint32_t mask) {
        std::string name = handler_name_of_file(file, options.compiler != nullptr);
        if (name.empty()) name = handler_name_of_config(file);  // a new configuration reloads its handler
        if (name.empty() && file.starts_with("..") && (mask & (IN_MOVED_TO | IN_CREATE))) {
            // Kubernetes' ConfigMap and Secret volumes: NAME.so is a link through "..data", and an
            // update renames a new "..data" over the old one, so only that name changes.
            schedule_rescan();
            return;
        }
        if (name.empty()) return;
        // IN_CREATE alone is a file still being written, unless it is a link that arrives whole.
        if ((mask & IN_CREATE) && !(mask & IN_ISDIR)) {
            struct stat st;
            if (::lstat((folder / file).c_str(), &st) != 0) return;
            if (!S_ISLNK(st.st_mode) && st.st_nlink < 2) return;  // a hard link also arrives whole
        }
        schedule(name, kSettle);
    }

    void schedule_rescan() {
        if (!rescan_timer) rescan_timer = std::make_unique<asio::steady_timer>(io);
        rescan_timer->expires_after(kSettle);
        rescan_timer->async_wait([this](boost::system::error_code ec) {
            if (!ec && !stopped) rescan();
        });
    }

    void schedule(const std::string& name, std::chrono::milliseconds delay) {
        auto& timer = pending[name];
        if (!timer) timer = std::make_unique<asio::steady_timer>(io);
        timer->expires_after(delay);
        timer->async_wait([this, name](boost::system::error_code ec) {
            if (ec || stopped) return;
            pending.erase(name);
            sync(name);
        });
    }

    /// Brings `name` in the registry in line with the files on disk.
    void sync(const std::string& name) {
        // While a compile of this name runs, whatever changed is looked at again when it ends.
        if (jobs && jobs->running(name)) {
            jobs->mark_again(name);
            return;
        }
        HandlerFileIdentity on_disk;
        const std::filesystem::path library = folder / (name + ".so");
        // A new configuration is a new version, for a handler that reads one (or may: none is live yet).
        const auto live = registry.current(name);
        const bool configurable = !live || live->reads_config();
        if (HandlerLoader::identify(library, on_disk)) {
            if (configurable) on_disk.config_stamp = HandlerLoader::config_stamp(folder, name);
            load(name, library, on_disk);
            return;
        }
        if (options.compiler) {
            for (const char* extension : {".cpp", ".c"}) {
                const std::filesystem::path source = folder / (name + extension);
                if (HandlerLoader::identify(source, on_disk)) {
                    if (configurable) on_disk.config_stamp = HandlerLoader::config_stamp(folder, name);
                    compile(name, source, on_disk);
                    return;
                }
            }
        }
        const bool known = seen.erase(name) > 0;
        leave_gate(name);
        if (registry.current(name)) {
            spdlog::info("handler {}: file removed; /csp/{} now answers 404", name, name);
            installer.removed(name);
        } else if (known) {
            // Its file was refused (perhaps only because it went while being read): gone now, it
            // is not refused any more.
            registry.refused(name, {});
        }
    }

    void load(const std::string& name, const std::filesystem::path& file, const HandlerFileIdentity& on_disk) {
        if (auto it = at_gate.find(name); it != at_gate.end()) {
            if (it->second.same_file_as(on_disk)) return;
            leave_gate(name);  // superseded, even by the file of the version live now
        }
        if (auto it = seen.find(name); it != seen.end() && it->second.same_file_as(on_disk)) return;
        if (refused_here(name, file, on_disk)) return;

        PreparedVersion prepared;
        LoadResult result = loader.prepare(name, file, folder, prepared);
        if (result.error == LoadError::changing ||
            (result.error == LoadError::incomplete && ++incomplete_retries[name] <= kMaxIncompleteRetries)) {
            spdlog::debug("handler {}: {}; looking again shortly", name, result.reason);
            schedule(name, kRetry);
            return;
        }
        incomplete_retries.erase(name);
        if (result.error != LoadError::none) {
            leave_gate(name);
            seen[name] = on_disk;
            install_or_refuse(name, file, std::move(result));
            return;
        }
        admit(name, file, on_disk, std::move(prepared));
    }

    /// True (and the file refused, with the reason) if this process cannot take it as declared.
    bool refused_here(const std::string& name, const std::filesystem::path& file, const HandlerFileIdentity& on_disk) {
        if (!options.refuses) return false;
        std::string why = options.refuses(name, file);
        if (why.empty()) return false;
        leave_gate(name);
        seen[name] = on_disk;
        LoadResult refused;
        refused.error = LoadError::gated;
        refused.reason = std::move(why);
        install_or_refuse(name, file, std::move(refused));
        return true;
    }

    /// Shows a prepared version to the gate, if any, and loads it if it passes. Meanwhile other
    /// names go on; a newer file for this one supersedes it.
    void admit(const std::string& name, const std::filesystem::path& file, const HandlerFileIdentity& on_disk,
               PreparedVersion prepared) {
        if (!options.gate) {
            bool stand_in = false;
            LoadResult opened = open_unless_quarantined(name, prepared, stand_in);
            finish_load(name, file, on_disk, std::move(opened), stand_in ? nullptr : &prepared);
            return;
        }
        if (at_gate.contains(name)) options.gate->cancel(name);
        at_gate[name] = on_disk;
        registry.vetting(name, true);
        auto held = std::make_shared<PreparedVersion>(std::move(prepared));
        options.gate->check(name, held->copy(), held->identity(), held->config_folder(),
                            [this, name, file, on_disk, held](GateVerdict verdict) {
                                at_gate.erase(name);
                                if (stopped) return;
                                if (!verdict.pass) {
                                    LoadResult refused;
                                    refused.error = LoadError::gated;
                                    refused.reason = std::move(verdict.reason);
                                    finish_load(name, file, on_disk, std::move(refused), nullptr);
                                    maybe_settled();
                                    return;
                                }
                                bool stand_in = false;
                                LoadResult opened = open_unless_quarantined(name, *held, stand_in);
                                finish_load(name, file, on_disk, std::move(opened), stand_in ? nullptr : held.get());
                                maybe_settled();
                            });
    }

    /// Opens a version that may load, unless the crash quarantine lists it: in a worker that
    /// starts after it crashed the others, its init or the threads it starts would bring this one
    /// down too, and so on for ever. A stand-in with its identity takes its place: the installer
    /// serves the version it replaced, or the router answers 503.
    LoadResult open_unless_quarantined(const std::string& name, PreparedVersion& prepared, bool& stand_in) {
        if (options.install.quarantined && options.install.quarantined(name, prepared.identity())) {
            LoadResult quarantined;
            quarantined.version = loader.quarantined_version(name, prepared.identity());
            spdlog::warn("handler {}: {} is quarantined: not loaded in this worker", name,
                         quarantined.version->describe());
            stand_in = true;
            return quarantined;
        }
        return loader.open(prepared);
    }

    /// Forgets the version of `name` at the gate, if any (its file went, or was refused before it got there).
    void leave_gate(const std::string& name) {
        if (!at_gate.erase(name)) return;
        options.gate->cancel(name);
        registry.vetting(name, false);
        maybe_settled();
    }

    void finish_load(const std::string& name, const std::filesystem::path& file, const HandlerFileIdentity& on_disk,
                     LoadResult result, const PreparedVersion* prepared) {
        seen[name] = result.version ? result.version->file() : on_disk;
        install_or_refuse(name, file, std::move(result), prepared);
    }

    void install_or_refuse(const std::string& name, const std::filesystem::path& file, LoadResult result,
                           const PreparedVersion* prepared = nullptr) {
        if (result.version)
            installer.install(std::move(result.version), prepared);
        else
            installer.refused(name, file, result.reason);
    }

    void compile(const std::string& name, const std::filesystem::path& source, const HandlerFileIdentity& on_disk) {
        if (auto it = seen.find(name); it != seen.end() && it->second.same_file_as(on_disk)) return;
        if (std::string why = loader.untrusted(source); !why.empty()) {
            seen[name] = on_disk;
            spdlog::error("handler {}: refused {}: untrusted: {}", name, source.string(), why);
            registry.refused(name, "untrusted: " + why);
            return;
        }
        if (jobs->running(name)) {
            jobs->mark_again(name);  // compiled again once this run ends: one at a time per name
            return;
        }
        spdlog::info("handler {}: compiling {}", name, source.string());
        jobs->start(name, source, [this, name, source, on_disk](CompileResult result) {
            on_compiled(name, source, on_disk, std::move(result));
        });
    }

    void on_compiled(const std::string& name, const std::filesystem::path& source, const HandlerFileIdentity& on_disk,
                     CompileResult result) {
        if (stopped) return;
        // The folder may have moved on while the compiler ran: a NAME.so arrived (it wins), or the
        // source changed or went. Then this result is stale: drop it and look again.
        HandlerFileIdentity now;
        const bool library_arrived = HandlerLoader::identify(folder / (name + ".so"), now);
        bool source_unchanged = HandlerLoader::identify(source, now);
        now.config_stamp = on_disk.config_stamp;  // a configuration that changed meanwhile brings its own event
        source_unchanged = source_unchanged && now.same_file_as(on_disk);
        if (library_arrived || !source_unchanged) {
            spdlog::debug("handler {}: the compile of {} is dropped: {}", name, source.filename().string(),
                          library_arrived ? name + ".so arrived meanwhile (it wins)" : "the source changed meanwhile");
            std::error_code ec;
            if (result.ok) std::filesystem::remove(result.output, ec);
            jobs->take_again(name);
            sync(name);
            return;
        }
        seen[name] = on_disk;
        if (result.shared)
            spdlog::info("handler {}: {} was compiled by another worker; loading its result", name,
                         source.filename().string());
        else if (result.ok)
            spdlog::info("handler {}: compiled {}", name, source.filename().string());
        if (result.ok) {
            PreparedVersion prepared;
            LoadResult read = loader.prepare(name, result.output, folder, prepared);
            std::error_code ec;
            std::filesystem::remove(result.output, ec);
            if (read.error == LoadError::none)
                admit(name, source, on_disk, std::move(prepared));
            else
                install_or_refuse(name, source, std::move(read));
        } else {
            auto live = registry.current(name);
            spdlog::error("handler {}: {} does not compile{}:\n{}", name, source.filename().string(),
                          live && !options.dev_diagnostics ? "; " + live->describe() + " keeps serving" : "",
                          result.diagnostics);
            registry.refused(name, source.filename().string() + " does not compile");
            if (options.dev_diagnostics)
                registry.install(loader.diagnostics_version(name, source.filename().string() +
                                                                      " does not compile:\n\n" + result.diagnostics));
        }
        if (jobs->take_again(name)) sync(name);
    }
};

HandlerWatcher::HandlerWatcher(asio::io_context& io, std::filesystem::path folder, HandlerLoader& loader,
                               HandlerRegistry& registry, WatcherOptions options)
    : impl_(std::make_unique<Impl>(io, std::move(folder), loader, registry, options)) {}

HandlerWatcher::~HandlerWatcher() = default;

void HandlerWatcher::start(std::function<void()> settled, bool wait_for_vetting) {
    impl_->start(std::move(settled), wait_for_vetting);
}
void HandlerWatcher::rescan() { impl_->rescan(); }
void HandlerWatcher::stop() { impl_->stop(); }

}  // namespace cspd
