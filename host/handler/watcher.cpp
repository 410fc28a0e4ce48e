#include "handler/watcher.hpp"

#include "handler/compiler.hpp"
#include "handler/handler_name.hpp"
#include "handler/loader.hpp"
#include "handler/registry.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <spdlog/spdlog.h>

#include <signal.h>
#include <sys/inotify.h>
#include <sys/stat.h>

#include <map>
#include <set>
#include <thread>

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
          options(watcher_options), inotify(io_context) {}

    ~Impl() { stop(); }

    /// One name's compilation, on a thread of its own.
    struct CompileJob {
        std::thread thread;
        std::atomic<pid_t> pid{-1};  // the compiler's process group while it runs
        std::atomic<bool> cancel{false};
        bool running = false;
        bool again = false;  // the source changed while it compiled
    };

    asio::io_context& io;
    std::filesystem::path folder;
    HandlerLoader& loader;
    HandlerRegistry& registry;
    WatcherOptions options;
    asio::posix::stream_descriptor inotify;
    std::map<std::string, std::shared_ptr<CompileJob>> jobs;
    std::map<std::string, std::unique_ptr<asio::steady_timer>> pending;
    // The file each live or refused name was last looked at in, so repeated events for an unchanged file do nothing.
    std::map<std::string, HandlerFileIdentity> seen;
    std::map<std::string, int> incomplete_retries;
    alignas(inotify_event) char buffer[64 * 1024];
    bool stopped = false;

    void start() {
        int fd = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
        if (fd < 0) throw std::system_error(errno, std::system_category(), "inotify_init1");
        inotify.assign(fd);
        const uint32_t mask = IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE | IN_CREATE | IN_ATTRIB |
                              IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR;
        if (::inotify_add_watch(fd, folder.c_str(), mask) < 0)
            throw std::system_error(errno, std::system_category(), "cannot watch " + folder.string());
        read_events();
        rescan();
    }

    void stop() {
        stopped = true;
        boost::system::error_code ignored;
        inotify.close(ignored);
        pending.clear();
        for (auto& [name, job] : jobs) {
            job->cancel = true;
            if (pid_t pid = job->pid; pid > 0) ::kill(-pid, SIGKILL);
            if (job->thread.joinable()) job->thread.join();
        }
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

    void read_events() {
        inotify.async_read_some(asio::buffer(buffer), [this](boost::system::error_code ec, std::size_t n) {
            if (ec == asio::error::operation_aborted || stopped) return;
            if (ec) {
                spdlog::error("inotify read failed: {}; handler changes are no longer seen", ec.message());
                return;
            }
            for (std::size_t at = 0; at + sizeof(inotify_event) <= n;) {
                const auto* event = reinterpret_cast<const inotify_event*>(buffer + at);
                on_event(*event);
                at += sizeof(inotify_event) + event->len;
            }
            read_events();
        });
    }

    void on_event(const inotify_event& event) {
        if (event.mask & IN_Q_OVERFLOW) {
            spdlog::warn("inotify queue overflowed; re-reading the handlers folder");
            rescan();
            return;
        }
        if (event.mask & (IN_DELETE_SELF | IN_MOVE_SELF)) {
            spdlog::error("handlers folder {} was removed or moved; loaded handlers keep serving, "
                          "but changes are no longer seen",
                          folder.string());
            return;
        }
        if (event.len == 0) return;
        std::string name = handler_name_of_file(event.name, options.compiler != nullptr);
        if (name.empty()) return;
        // IN_CREATE alone is a file still being written, unless it is a link that arrives whole.
        if ((event.mask & IN_CREATE) && !(event.mask & IN_ISDIR)) {
            struct stat st;
            if (::lstat((folder / event.name).c_str(), &st) != 0) return;
            if (!S_ISLNK(st.st_mode) && st.st_nlink < 2) return;  // a hard link also arrives whole
        }
        schedule(name, kSettle);
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
        if (auto job = jobs.find(name); job != jobs.end() && job->second->running) {
            job->second->again = true;
            return;
        }
        HandlerFileIdentity on_disk;
        const std::filesystem::path library = folder / (name + ".so");
        if (HandlerLoader::identify(library, on_disk)) {
            load(name, library, on_disk);
            return;
        }
        if (options.compiler) {
            for (const char* extension : {".cpp", ".c"}) {
                const std::filesystem::path source = folder / (name + extension);
                if (HandlerLoader::identify(source, on_disk)) {
                    compile(name, source, on_disk);
                    return;
                }
            }
        }
        seen.erase(name);
        if (registry.current(name)) {
            spdlog::info("handler {}: file removed; /csp/{} now answers 404", name, name);
            registry.remove(name);
        }
    }

    void load(const std::string& name, const std::filesystem::path& file, const HandlerFileIdentity& on_disk) {
        if (auto it = seen.find(name); it != seen.end() && it->second.same_file_as(on_disk)) return;

        LoadResult result = loader.load(name, file);
        if (result.error == LoadError::changing ||
            (result.error == LoadError::incomplete && ++incomplete_retries[name] <= kMaxIncompleteRetries)) {
            spdlog::debug("handler {}: {}; looking again shortly", name, result.reason);
            schedule(name, kRetry);
            return;
        }
        incomplete_retries.erase(name);
        seen[name] = result.version ? result.version->file() : on_disk;
        install_or_refuse(name, file, std::move(result));
    }

    void install_or_refuse(const std::string& name, const std::filesystem::path& file, LoadResult result) {
        auto live = registry.current(name);
        if (!result.version) {
            if (live)
                spdlog::error("handler {}: refused {}: {}; {} keeps serving", name, file.string(), result.reason,
                              live->describe());
            else
                spdlog::error("handler {}: refused {}: {}", name, file.string(), result.reason);
            registry.refused(name, result.reason);
            return;
        }
        spdlog::info("handler {}: {} {}", name, live ? "reloaded as" : "loaded", result.version->describe());
        registry.install(std::move(result.version));
    }

    void compile(const std::string& name, const std::filesystem::path& source, const HandlerFileIdentity& on_disk) {
        if (auto it = seen.find(name); it != seen.end() && it->second.same_file_as(on_disk)) return;
        if (std::string why = loader.untrusted(source); !why.empty()) {
            seen[name] = on_disk;
            spdlog::error("handler {}: refused {}: untrusted: {}", name, source.string(), why);
            registry.refused(name, "untrusted: " + why);
            return;
        }
        auto& job = jobs[name];
        if (job && job->running) {
            job->again = true;  // compiled again once this run ends: one at a time per name
            return;
        }
        if (job && job->thread.joinable()) job->thread.join();
        job = std::make_shared<CompileJob>();
        job->running = true;
        spdlog::info("handler {}: compiling {}", name, source.string());
        const HandlerCompiler* compiler = options.compiler;
        job->thread = std::thread([this, compiler, job, name, source, on_disk] {
            CompileResult result = compiler->compile(name, source, job->pid, job->cancel);
            asio::post(io, [this, job, name, source, on_disk, result = std::move(result)]() mutable {
                on_compiled(name, source, on_disk, std::move(result), *job);
            });
        });
    }

    void on_compiled(const std::string& name, const std::filesystem::path& source, const HandlerFileIdentity& on_disk,
                     CompileResult result, CompileJob& job) {
        job.running = false;
        if (stopped) return;
        // The folder may have moved on while the compiler ran: a NAME.so arrived (it wins), or the
        // source changed or went. Then this result is stale: drop it and look again.
        HandlerFileIdentity now;
        const bool library_arrived = HandlerLoader::identify(folder / (name + ".so"), now);
        const bool source_unchanged = HandlerLoader::identify(source, now) && now.same_file_as(on_disk);
        if (library_arrived || !source_unchanged) {
            std::error_code ec;
            if (result.ok) std::filesystem::remove(result.output, ec);
            job.again = false;
            sync(name);
            return;
        }
        seen[name] = on_disk;
        if (result.ok) {
            LoadResult loaded = loader.load(name, result.output);
            std::error_code ec;
            std::filesystem::remove(result.output, ec);
            install_or_refuse(name, source, std::move(loaded));
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
        if (job.again) {
            job.again = false;
            sync(name);
        }
    }
};

HandlerWatcher::HandlerWatcher(asio::io_context& io, std::filesystem::path folder, HandlerLoader& loader,
                               HandlerRegistry& registry, WatcherOptions options)
    : impl_(std::make_unique<Impl>(io, std::move(folder), loader, registry, options)) {}

HandlerWatcher::~HandlerWatcher() = default;

void HandlerWatcher::start() { impl_->start(); }
void HandlerWatcher::rescan() { impl_->rescan(); }
void HandlerWatcher::stop() { impl_->stop(); }

}  // namespace cspd
