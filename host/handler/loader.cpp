#include "handler/loader.hpp"

#include "handler/init_context.hpp"

#include "common/fnv1a.hpp"
#include "common/handler_code.hpp"
#include "common/unique_fd.hpp"
#include "handler/descriptor_check.hpp"
#include "handler/elf_check.hpp"
#include "handler/file_trust.hpp"
#include "handler/private_folders.hpp"

#include <boost/dll/shared_library.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <dlfcn.h>
#include <link.h>

#include <cerrno>
#include <cstring>
#include <system_error>

namespace cspd {
namespace {

constexpr std::uint64_t kMaxHandlerFile = 512ull << 20;

std::string errno_text(int err) { return std::system_category().message(err); }

HandlerFileIdentity identity_of(const struct stat& st) {
    HandlerFileIdentity id;
    id.device = st.st_dev;
    id.inode = st.st_ino;
    id.size = static_cast<std::uint64_t>(st.st_size);
    id.mtime_ns = static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
    id.ctime_ns = static_cast<std::int64_t>(st.st_ctim.tv_sec) * 1'000'000'000 + st.st_ctim.tv_nsec;
    return id;
}

bool read_all(int fd, std::string& out, std::size_t size) {
    out.resize(size);
    std::size_t done = 0;
    while (done < size) {
        ssize_t n = ::pread(fd, out.data() + done, size - done, static_cast<off_t>(done));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        done += static_cast<std::size_t>(n);
    }
    return true;
}

bool write_all(int fd, std::string_view bytes) {
    while (!bytes.empty()) {
        ssize_t n = ::write(fd, bytes.data(), bytes.size());
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        bytes.remove_prefix(static_cast<std::size_t>(n));
    }
    return true;
}

/// The library mapping, and the record of where its code lies (for blame): forgotten once it is
/// unloaded.
struct LoadedLibrary {
    boost::dll::shared_library library;
    int code_slot = -1;
    ~LoadedLibrary() {
        library.unload();
        forget_handler_code(code_slot);
    }
};

/// Where the loaded object at `path` lies: [first, last), and its load base; zeros if not found.
struct MappedRange {
    std::uintptr_t first = 0, last = 0, base = 0;
};
MappedRange mapped_range(const std::string& path) {
    struct Search {
        const std::string* path;
        MappedRange found;
    } search{&path, {}};
    ::dl_iterate_phdr(
        [](dl_phdr_info* info, std::size_t, void* data) {
            auto* s = static_cast<Search*>(data);
            if (!info->dlpi_name || *s->path != info->dlpi_name) return 0;
            s->found.base = info->dlpi_addr;
            for (int i = 0; i < info->dlpi_phnum; ++i) {
                const ElfW(Phdr)& segment = info->dlpi_phdr[i];
                if (segment.p_type != PT_LOAD) continue;
                const std::uintptr_t from = info->dlpi_addr + segment.p_vaddr;
                const std::uintptr_t to = from + segment.p_memsz;
                if (!s->found.first || from < s->found.first) s->found.first = from;
                if (to > s->found.last) s->found.last = to;
            }
            return 1;
        },
        &search);
    return search.found;
}

}  // namespace

HandlerLoader::HandlerLoader(const std::filesystem::path& scratch_parent, bool strict_modes)
    : scratch_(std::in_place, scratch_parent), copies_(scratch_->path()), strict_modes_(strict_modes) {}

HandlerLoader::HandlerLoader(CopiesInto where, bool strict_modes)
    : copies_(std::move(where.folder)), strict_modes_(strict_modes) {}

HandlerLoader::HandlerLoader(LoadInPlace) : strict_modes_(false) {}

std::string HandlerLoader::untrusted(const std::filesystem::path& file) const {
    if (!strict_modes_) return {};
    struct stat st;
    if (::stat(file.c_str(), &st) != 0) return "cannot stat: " + errno_text(errno);
    return trust_problem(st, file);
}

namespace {
int serve_diagnostics(const csp_request* request, csp_reply* reply) {
    const auto* text = static_cast<const std::string*>(request->state);
    csp_reply_set_content_type(reply, "text/plain; charset=utf-8");
    csp_reply_append(reply, text->data(), text->size());
    return 500;
}
void free_diagnostics(void* state) { delete static_cast<std::string*>(state); }

int serve_quarantined(const csp_request*, csp_reply* reply) {
    csp_reply_set_content_type(reply, "text/plain; charset=utf-8");
    csp_reply_puts(reply, "this handler version is quarantined\n");
    return 503;
}
}  // namespace

std::shared_ptr<HandlerVersion> HandlerLoader::diagnostics_version(const std::string& name, std::string text) {
    HandlerEntry entry;
    entry.minor = CSP_ABI_MINOR;
    entry.handle = &serve_diagnostics;
    entry.cleanup = &free_diagnostics;
    return std::make_shared<HandlerVersion>(name, next_sequence_++, HandlerFileIdentity{}, nullptr, entry,
                                            new std::string(std::move(text)));
}

std::shared_ptr<HandlerVersion> HandlerLoader::quarantined_version(const std::string& name,
                                                                   const HandlerFileIdentity& file) {
    HandlerEntry entry;
    entry.minor = CSP_ABI_MINOR;
    entry.handle = &serve_quarantined;
    return std::make_shared<HandlerVersion>(name, next_sequence_++, file, nullptr, entry, nullptr);
}

std::uint64_t HandlerLoader::config_stamp(const std::filesystem::path& folder, const std::string& name) {
    std::uint64_t stamp = 0;
    for (const char* extension : {".conf", ".json"}) {  // both: a second file appearing is a change too
        struct stat st;
        if (::stat((folder / (name + extension)).c_str(), &st) != 0) continue;
        const HandlerFileIdentity id = identity_of(st);
        char text[128];
        const int n = std::snprintf(text, sizeof text, "%s %llu %llu %llu %lld %lld", extension,
                                    (unsigned long long)id.device, (unsigned long long)id.inode,
                                    (unsigned long long)id.size, (long long)id.mtime_ns, (long long)id.ctime_ns);
        stamp = fnv1a64({text, static_cast<std::size_t>(n)}, stamp ? stamp : kFnv1a64Start) | 1;  // never 0
    }
    return stamp;
}

HandlerLoader::~HandlerLoader() = default;

bool HandlerLoader::identify(const std::filesystem::path& file, HandlerFileIdentity& out) {
    struct stat st;
    if (::stat(file.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
    out = identity_of(st);
    return true;
}

namespace {
LoadResult failure(LoadError error, std::string reason) {
    LoadResult result;
    result.error = error;
    result.reason = std::move(reason);
    return result;
}
}  // namespace

PreparedVersion::PreparedVersion(PreparedVersion&& other) noexcept { *this = std::move(other); }

PreparedVersion& PreparedVersion::operator=(PreparedVersion&& other) noexcept {
    if (this == &other) return *this;
    if (!copy_.empty() && owns_copy_) ::unlink(copy_.c_str());
    name_ = std::move(other.name_);
    copy_ = std::exchange(other.copy_, {});
    owns_copy_ = other.owns_copy_;
    config_folder_ = std::move(other.config_folder_);
    identity_ = other.identity_;
    image_hash_ = other.image_hash_;
    sequence_ = other.sequence_;
    config_ = std::move(other.config_);
    return *this;
}

PreparedVersion::~PreparedVersion() {
    if (!copy_.empty() && owns_copy_) ::unlink(copy_.c_str());
}

LoadResult HandlerLoader::load(const std::string& name, const std::filesystem::path& file,
                               const std::filesystem::path& config_folder) {
    PreparedVersion prepared;
    LoadResult result = prepare(name, file, config_folder, prepared);
    if (result.error != LoadError::none) return result;
    return open(prepared);
}

LoadResult HandlerLoader::prepare(const std::string& name, const std::filesystem::path& file,
                                  const std::filesystem::path& config_folder, PreparedVersion& out) {
    using enum LoadError;
    const std::filesystem::path config_dir = config_folder.empty() ? file.parent_path() : config_folder;
    UniqueFd source(::open(file.c_str(), O_RDONLY | O_CLOEXEC));
    if (!source) return failure(unreadable, "cannot open: " + errno_text(errno));
    struct stat before, after;
    if (::fstat(source.get(), &before) != 0 || !S_ISREG(before.st_mode))
        return failure(unreadable, "not a regular file");
    if (strict_modes_) {
        if (std::string why = trust_problem(before, file); !why.empty())
            return failure(untrusted, "untrusted: " + why + " (--insecure-handlers turns this check off)");
    }
    if (static_cast<std::uint64_t>(before.st_size) > kMaxHandlerFile)
        return failure(too_large, "file too large (" + std::to_string(before.st_size) + " bytes)");
    std::string image;
    if (!read_all(source.get(), image, static_cast<std::size_t>(before.st_size)) ||
        ::fstat(source.get(), &after) != 0 || after.st_size != before.st_size ||
        after.st_mtim.tv_sec != before.st_mtim.tv_sec || after.st_mtim.tv_nsec != before.st_mtim.tv_nsec ||
        after.st_ctim.tv_sec != before.st_ctim.tv_sec || after.st_ctim.tv_nsec != before.st_ctim.tv_nsec)
        return failure(changing, "file changed while being read");
    if (const ElfVerdict elf = check_elf_image(image); !elf.ok()) {
        // Too short to tell, or an ELF cut short: a writer may still be at work.
        const bool cut_short = elf.problem == ElfProblem::too_short || elf.problem == ElfProblem::truncated;
        return failure(cut_short ? incomplete : not_loadable, std::string(elf.reason));
    }
    HandlerFileIdentity identity = identity_of(before);
    identity.content_hash = fnv1a64(image);
    // The configuration is part of the version: a new one is a new version, with its own hash (so a
    // version fenced for crashing in init with one configuration is not fenced with the next).
    // Only a handler with a context init reads it (known once it is loaded, in open()); until then
    // the version is named as if it did, so a load gate is told the same.
    const std::uint64_t image_hash = identity.content_hash;
    identity.config_stamp = config_stamp(config_dir, name);
    HandlerConfig::Read config = HandlerConfig::read(config_dir, name);
    if (config.config)
        identity.content_hash = fnv1a64(config.config->text(), fnv1a64("\n--config--\n", identity.content_hash));

    // A unique private name per version: dlopen never sees a path or inode twice.
    const std::uint64_t sequence = next_sequence_++;
    const std::filesystem::path copy =
        !copies_.empty() ? copies_ / (name + "." + std::to_string(sequence) + ".so") : file;
    if (!copies_.empty()) {
        UniqueFd copied(::open(copy.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0700));
        if (!copied || !write_all(copied.get(), image)) {
            const int err = errno;
            ::unlink(copy.c_str());
            return failure(io_error, "cannot write private copy " + copy.string() + ": " + errno_text(err));
        }
    }
    out = PreparedVersion{};
    out.name_ = name;
    out.copy_ = copy;
    out.config_folder_ = config_dir;
    out.identity_ = identity;
    out.image_hash_ = image_hash;
    out.sequence_ = sequence;
    out.config_ = std::move(config);
    out.owns_copy_ = !copies_.empty();
    return {};
}

LoadResult HandlerLoader::open(PreparedVersion& prepared) {
    using enum LoadError;
    const std::string& name = prepared.name_;
    const std::filesystem::path& copy = prepared.copy_;
    HandlerFileIdentity identity = prepared.identity_;
    const std::uint64_t sequence = prepared.sequence_;
    HandlerConfig::Read config = prepared.config_;

    // Named in a crash report (and blamed) if loading or init brings the process down.
    const HandlerLabel label{name.c_str(), sequence, identity.size, identity.content_hash};
    auto loaded = std::make_shared<LoadedLibrary>();
    boost::dll::shared_library* library = &loaded->library;
    boost::dll::fs::error_code ec;
    struct PhaseDone {  // whichever way loading ends, observers hear it is over
        const PhaseObserver& observer;
        const HandlerLabel& label;
        ~PhaseDone() {
            if (observer) observer(HandlerPhase::none, label);
        }
    } phase_done{on_phase_, label};
    {
        if (on_phase_) on_phase_(HandlerPhase::load, label);
        RunningHandler marker(label, HandlerPhase::load);
        // RTLD_NOW: a missing symbol refuses the load now instead of crashing a request later.
        // RTLD_LOCAL: two handlers exporting the same symbol never collide.
        library->load(copy, boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local, ec);
    }
    if (!ec) {
        // A fault on a thread of the handler's own is blamed on it by this range.
        const MappedRange range = mapped_range(copy.string());
        if (range.first < range.last)
            loaded->code_slot = remember_handler_code(range.first, range.last, range.base, label);
    }
    if (ec) {
        const char* detail = ::dlerror();
        return failure(dlopen_failed, std::string("dlopen failed: ") + (detail ? detail : ec.message()));
    }
    if (!library->has("csp_handler"))
        return failure(no_entry_point, "no csp_handler symbol (define the handler with CSP_HANDLER)");
    const DescriptorCheck check = check_descriptor(&library->get<const unsigned>("csp_handler"));
    if (check.error != none) return failure(check.error, check.why);
    if (check.init_with_context) {
        if (!config.error.empty()) return failure(bad_config, "configuration refused: " + config.error);
    } else {
        // A handler built before configurations (or without a context init) never sees one: a file
        // of the same name beside it (its own data, say) neither refuses it nor makes it a new version.
        identity.content_hash = prepared.image_hash_;
        identity.config_stamp = 0;
        config = {};
    }
    void* state = nullptr;
    if (check.init || check.init_with_context) {
        int rc = 0;
        if (on_phase_) on_phase_(HandlerPhase::init, label);
        RunningHandler marker(label, HandlerPhase::init);
        const HandlerConfig none;
        InitContext context(name, label, config.config ? *config.config : none, worker_index_, worker_count_);
        try {
            rc = check.init_with_context ? check.init_with_context(context.raw(), &state) : check.init(&state);
        } catch (const std::exception& e) {
            return failure(init_failed, std::string("init threw: ") + e.what());
        } catch (...) {
            return failure(init_failed, "init threw an exception");
        }
        if (rc != 0) return failure(init_failed, "init returned " + std::to_string(rc));
    }
    std::shared_ptr<void> owner(loaded, library);
    LoadResult result;
    result.version = std::make_shared<HandlerVersion>(name, sequence, identity, std::move(owner), check.entry, state);
    return result;
}

}  // namespace cspd
