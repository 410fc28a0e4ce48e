#include "handler_loader.hpp"

#include "elf_check.hpp"

#include <boost/dll/shared_library.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <dlfcn.h>
#include <elf.h>

#include <cerrno>
#include <cstring>
#include <system_error>

namespace cspd {
namespace {

constexpr std::uint64_t kMaxHandlerFile = 512ull << 20;

std::string errno_text(int err) { return std::system_category().message(err); }

std::uint64_t fnv1a64(std::string_view bytes) {
    std::uint64_t h = 0xcbf29ce484222325ull;
    for (unsigned char c : bytes) {
        h ^= c;
        h *= 0x100000001b3ull;
    }
    return h;
}

HandlerFileIdentity identity_of(const struct stat& st) {
    HandlerFileIdentity id;
    id.device = st.st_dev;
    id.inode = st.st_ino;
    id.size = static_cast<std::uint64_t>(st.st_size);
    id.mtime_ns = static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
    id.ctime_ns = static_cast<std::int64_t>(st.st_ctim.tv_sec) * 1'000'000'000 + st.st_ctim.tv_nsec;
    return id;
}

/// Owns an fd for the scope of a load.
struct Fd {
    int fd = -1;
    ~Fd() { if (fd >= 0) ::close(fd); }
};

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

/// Like sshd's StrictModes: code that runs inside the server must not be writable by anyone the
/// server does not trust. Empty if the file and its folder pass.
std::string trust_problem(const struct stat& file, const std::filesystem::path& folder) {
    const uid_t me = ::geteuid();
    if (file.st_uid != 0 && file.st_uid != me)
        return "owned by uid " + std::to_string(file.st_uid) + ", neither root nor the server's user";
    if (file.st_mode & (S_IWGRP | S_IWOTH)) return "writable by group or others (chmod go-w)";
    struct stat dir;
    if (::stat(folder.c_str(), &dir) != 0) return "cannot stat its folder";
    if (dir.st_uid != 0 && dir.st_uid != me)
        return "its folder is owned by uid " + std::to_string(dir.st_uid) + ", neither root nor the server's user";
    if (dir.st_mode & S_IWOTH) return "its folder is writable by others (chmod o-w " + folder.string() + ")";
    return {};
}

} // namespace

HandlerLoader::HandlerLoader(const std::filesystem::path& scratch_parent, bool strict_modes)
    : strict_modes_(strict_modes) {
    std::string pattern = (scratch_parent / ("cspd-" + std::to_string(::getpid()) + "-XXXXXX")).string();
    if (!::mkdtemp(pattern.data()))
        throw std::system_error(errno, std::system_category(),
                                "cannot create private handler directory under " + scratch_parent.string());
    scratch_dir_ = pattern;
}

std::string HandlerLoader::untrusted(const std::filesystem::path& file) const {
    if (!strict_modes_) return {};
    struct stat st;
    if (::stat(file.c_str(), &st) != 0) return "cannot stat: " + errno_text(errno);
    return trust_problem(st, file.parent_path());
}

namespace {
int serve_diagnostics(const csp_request* request, csp_reply* reply) {
    const auto* text = static_cast<const std::string*>(request->state);
    csp_reply_set_content_type(reply, "text/plain; charset=utf-8");
    csp_reply_append(reply, text->data(), text->size());
    return 500;
}
void free_diagnostics(void* state) { delete static_cast<std::string*>(state); }
const csp_handler_descriptor kDiagnostics{CSP_ABI_VERSION, sizeof(csp_handler_descriptor), &serve_diagnostics,
                                          nullptr, &free_diagnostics};
} // namespace

std::shared_ptr<HandlerVersion> HandlerLoader::diagnostics_version(const std::string& name, std::string text) {
    return std::make_shared<HandlerVersion>(name, next_sequence_++, HandlerFileIdentity{}, nullptr, &kDiagnostics,
                                            new std::string(std::move(text)));
}

HandlerLoader::~HandlerLoader() {
    std::error_code ec;
    std::filesystem::remove_all(scratch_dir_, ec);
}

bool HandlerLoader::identify(const std::filesystem::path& file, HandlerFileIdentity& out) {
    struct stat st;
    if (::stat(file.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
    out = identity_of(st);
    return true;
}

LoadResult HandlerLoader::load(const std::string& name, const std::filesystem::path& file) {
    LoadResult result;
    Fd source{::open(file.c_str(), O_RDONLY | O_CLOEXEC)};
    if (source.fd < 0) {
        result.error = "cannot open: " + errno_text(errno);
        return result;
    }
    struct stat before, after;
    if (::fstat(source.fd, &before) != 0 || !S_ISREG(before.st_mode)) {
        result.error = "not a regular file";
        return result;
    }
    if (strict_modes_) {
        if (std::string why = trust_problem(before, file.parent_path()); !why.empty()) {
            result.error = "untrusted: " + why + " (--insecure-handlers turns this check off)";
            return result;
        }
    }
    if (static_cast<std::uint64_t>(before.st_size) > kMaxHandlerFile) {
        result.error = "file too large (" + std::to_string(before.st_size) + " bytes)";
        return result;
    }
    std::string image;
    if (!read_all(source.fd, image, static_cast<std::size_t>(before.st_size)) ||
        ::fstat(source.fd, &after) != 0 || after.st_size != before.st_size ||
        after.st_mtim.tv_sec != before.st_mtim.tv_sec || after.st_mtim.tv_nsec != before.st_mtim.tv_nsec ||
        after.st_ctim.tv_sec != before.st_ctim.tv_sec || after.st_ctim.tv_nsec != before.st_ctim.tv_nsec) {
        result.error = "file changed while being read";
        result.retry = true;
        return result;
    }
    if (std::string why = check_elf_image(image); !why.empty()) {
        result.error = why;
        // Too short to tell, or an ELF cut short: a writer may still be at work.
        const bool elf_magic = image.size() >= SELFMAG && std::memcmp(image.data(), ELFMAG, SELFMAG) == 0;
        result.incomplete = image.size() < SELFMAG || (elf_magic && (why.starts_with("truncated") || why.find("too short") != std::string::npos));
        return result;
    }
    HandlerFileIdentity identity = identity_of(before);
    identity.content_hash = fnv1a64(image);

    // A unique private name per version: dlopen never sees a path or inode twice.
    const std::uint64_t sequence = next_sequence_++;
    const std::filesystem::path copy = scratch_dir_ / (name + "." + std::to_string(sequence) + ".so");
    {
        Fd out{::open(copy.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0700)};
        if (out.fd < 0 || !write_all(out.fd, image)) {
            result.error = "cannot write private copy " + copy.string() + ": " + errno_text(errno);
            ::unlink(copy.c_str());
            return result;
        }
    }

    auto library = std::make_shared<boost::dll::shared_library>();
    boost::dll::fs::error_code ec;
    // RTLD_NOW: a missing symbol refuses the load now instead of crashing a request later.
    // RTLD_LOCAL: two handlers exporting the same symbol never collide.
    library->load(copy, boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local, ec);
    ::unlink(copy.c_str());  // the mapping lives on; nothing is left on disk
    if (ec) {
        const char* detail = ::dlerror();
        result.error = std::string("dlopen failed: ") + (detail ? detail : ec.message());
        return result;
    }
    if (!library->has("csp_handler")) {
        result.error = "no csp_handler symbol (define the handler with CSP_HANDLER)";
        return result;
    }
    const auto* descriptor = &library->get<const csp_handler_descriptor>("csp_handler");
    if (descriptor->abi_version != CSP_ABI_VERSION) {
        result.error = "built for SDK ABI version " + std::to_string(descriptor->abi_version) +
                       ", this host speaks version " + std::to_string(CSP_ABI_VERSION) +
                       " (rebuild it against this SDK)";
        return result;
    }
    if (descriptor->descriptor_size < sizeof(csp_handler_descriptor) || !descriptor->handle) {
        result.error = "malformed csp_handler descriptor";
        return result;
    }
    void* state = nullptr;
    if (descriptor->init) {
        int rc = 0;
        try {
            rc = descriptor->init(&state);
        } catch (const std::exception& e) {
            result.error = std::string("init threw: ") + e.what();
            return result;
        } catch (...) {
            result.error = "init threw an exception";
            return result;
        }
        if (rc != 0) {
            result.error = "init returned " + std::to_string(rc);
            return result;
        }
    }
    std::shared_ptr<void> owner(library, library.get());
    result.version = std::make_shared<HandlerVersion>(name, sequence, identity, std::move(owner),
                                                      descriptor, state);
    return result;
}

} // namespace cspd
