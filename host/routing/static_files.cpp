#include "routing/static_files.hpp"

#include "routing/mime_types.hpp"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/ascii.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <system_error>
#include <utility>

namespace cspd {
namespace {

int open_beneath(int root_fd, const std::string& relative) {
    open_how how{};
    how.flags = O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK;
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
    long fd;
    do {
        fd = ::syscall(SYS_openat2, root_fd, relative.c_str(), &how, sizeof how);
    } while (fd < 0 && errno == EINTR);
    return static_cast<int>(fd);
}

/// Whether Accept-Encoding takes `coding`: listed (or "*") with a q above 0.
bool accepts(std::string_view header, std::string_view coding) {
    bool star = false;
    while (!header.empty()) {
        const std::size_t comma = header.find(',');
        std::string_view item = header.substr(0, comma);
        header = comma == std::string_view::npos ? std::string_view{} : header.substr(comma + 1);
        const std::size_t semicolon = item.find(';');
        const std::string_view name = trim_ows(item.substr(0, semicolon));
        bool zero = false;
        if (semicolon != std::string_view::npos) {
            std::string_view q = item.substr(semicolon + 1);
            const std::size_t at = q.find("q=");
            if (at != std::string_view::npos) {
                q = q.substr(at + 2);
                zero = q.starts_with("0") && q.find_first_not_of("0. \t") == std::string_view::npos;
            }
        }
        if (iequals(name, coding)) return !zero;
        if (name == "*") star = !zero;
    }
    return star;
}

/// Text and the like shrink when compressed; images and archives do not (no sidecar is looked for).
bool compressible(std::string_view content_type) {
    return content_type.starts_with("text/") || content_type.starts_with("application/json") ||
           content_type.starts_with("application/xml") || content_type.starts_with("application/wasm") ||
           content_type.starts_with("image/svg+xml");
}

void describe(const struct stat& st, std::string_view suffix, StaticFiles::File& file) {
    const std::int64_t mtime_ns = static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
    file.mtime = st.st_mtim.tv_sec;
    file.mtime_ns = mtime_ns;
    file.ctime_ns = static_cast<std::int64_t>(st.st_ctim.tv_sec) * 1'000'000'000 + st.st_ctim.tv_nsec;
    file.device = static_cast<std::uint64_t>(st.st_dev);
    file.inode = static_cast<std::uint64_t>(st.st_ino);
    const int n = std::snprintf(file.etag_text, sizeof file.etag_text, "\"%llx-%llx%.*s\"",
                                static_cast<unsigned long long>(mtime_ns), static_cast<unsigned long long>(st.st_size),
                                static_cast<int>(suffix.size()), suffix.data());
    file.etag_size = n > 0 ? std::min<std::size_t>(static_cast<std::size_t>(n), sizeof file.etag_text - 1) : 0;
}

}  // namespace

unsigned accepted_codings(std::string_view accept_encoding) {
    if (accept_encoding.empty()) return 0;
    return (accepts(accept_encoding, "br") ? kAcceptsBrotli : 0u) | (accepts(accept_encoding, "gzip") ? kAcceptsGzip : 0u);
}

StaticFiles::File StaticFiles::facts_of(const File& file) {
    File facts;
    facts.size = file.size;
    facts.offset = file.offset;
    facts.content_type = file.content_type;
    facts.full_size = file.full_size;
    facts.mtime = file.mtime;
    facts.mtime_ns = file.mtime_ns;
    facts.ctime_ns = file.ctime_ns;
    facts.device = file.device;
    facts.inode = file.inode;
    facts.content_encoding = file.content_encoding;
    facts.has_variants = file.has_variants;
    std::copy(std::begin(file.etag_text), std::end(file.etag_text), std::begin(facts.etag_text));
    facts.etag_size = file.etag_size;
    return facts;
}

void StaticFiles::watch() {
    if (!watch_) watch_ = std::make_unique<WwwWatch>(path_);
}

StaticFiles::StaticFiles(const std::filesystem::path& root)
    : root_(::open(root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC)), path_(root) {
    if (!root_) throw std::system_error(errno, std::system_category(), "cannot open www folder " + root.string());
}

StaticFiles::Outcome StaticFiles::open(std::string_view decoded_path, File& file,
                                       std::string_view accept_encoding) const {
    const std::size_t first = decoded_path.find_first_not_of('/');
    std::string relative(first == std::string_view::npos ? std::string_view{} : decoded_path.substr(first));
    const bool wants_folder = relative.empty() || relative.back() == '/';
    if (relative.empty()) relative.push_back('.');  // the root itself

    UniqueFd fd(open_beneath(root_.get(), relative));
    if (!fd) return errno == EACCES ? Outcome::forbidden : Outcome::not_found;
    struct stat st;
    if (::fstat(fd.get(), &st) != 0) return Outcome::not_found;
    if (S_ISDIR(st.st_mode)) {
        if (!wants_folder) return Outcome::redirect_to_slash;
        if (relative.back() != '/') relative.push_back('/');
        relative.append("index.html");
        fd.reset(open_beneath(root_.get(), relative));
        if (!fd) return errno == EACCES ? Outcome::forbidden : Outcome::not_found;
        if (::fstat(fd.get(), &st) != 0) return Outcome::not_found;
    }
    if (!S_ISREG(st.st_mode)) return Outcome::not_found;  // devices, sockets, fifos are never served
    file.content_type = content_type_for(relative);
    std::string_view suffix;
    if (compressible(file.content_type)) {
        // NAME.br, NAME.gz beside NAME: a precompressed copy, sent when the client takes it.
        static constexpr std::pair<std::string_view, std::string_view> kSidecars[] = {{".br", "br"}, {".gz", "gzip"}};
        for (const auto& [extension, coding] : kSidecars) {
            UniqueFd sidecar(open_beneath(root_.get(), relative + std::string(extension)));
            struct stat sidecar_st;
            if (!sidecar || ::fstat(sidecar.get(), &sidecar_st) != 0 || !S_ISREG(sidecar_st.st_mode)) continue;
            file.has_variants = true;
            if (file.content_encoding.empty() && accepts(accept_encoding, coding)) {
                fd = std::move(sidecar);
                st = sidecar_st;
                file.content_encoding = coding;
                suffix = extension == ".br" ? "-br" : "-gz";
            }
        }
    }
    file.fd = std::move(fd);
    file.size = file.full_size = static_cast<std::size_t>(st.st_size);
    file.offset = 0;
    describe(st, suffix, file);
    return Outcome::found;
}

bool StaticFiles::read_into(const File& file, std::string& out) {
    const std::size_t start = out.size();
    out.resize(start + file.size);
    std::size_t done = 0;
    while (done < file.size) {
        ssize_t n = ::pread(file.fd.get(), out.data() + start + done, file.size - done,
                            static_cast<off_t>(file.offset + done));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            out.resize(start);
            return false;
        }
        done += static_cast<std::size_t>(n);
    }
    return true;
}

}  // namespace cspd
