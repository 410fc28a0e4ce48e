#include "routing/static_files.hpp"

#include "routing/mime_types.hpp"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

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

}  // namespace

StaticFiles::StaticFiles(const std::filesystem::path& root)
    : root_(::open(root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC)) {
    if (!root_) throw std::system_error(errno, std::system_category(), "cannot open www folder " + root.string());
}

StaticFiles::Outcome StaticFiles::open(std::string_view decoded_path, File& file) const {
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
    file.fd = std::move(fd);
    file.size = static_cast<std::size_t>(st.st_size);
    file.content_type = content_type_for(relative);
    return Outcome::found;
}

bool StaticFiles::read_into(const File& file, std::string& out) {
    const std::size_t start = out.size();
    out.resize(start + file.size);
    std::size_t done = 0;
    while (done < file.size) {
        ssize_t n = ::pread(file.fd.get(), out.data() + start + done, file.size - done, static_cast<off_t>(done));
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
