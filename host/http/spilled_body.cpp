#include "http/spilled_body.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace cspd {

std::shared_ptr<SpilledBody> SpilledBody::create(const std::filesystem::path& folder, std::string& error) {
    UniqueFd fd(::open(folder.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600));
    if (!fd) {
        // A file system without O_TMPFILE: a named file, unlinked at once.
        std::string path = (folder / "cspd-body-XXXXXX").string();
        fd.reset(::mkostemp(path.data(), O_CLOEXEC));
        if (fd) ::unlink(path.c_str());
    }
    if (!fd) {
        error = "cannot make a temporary file in " + folder.string() + ": " + std::strerror(errno);
        return nullptr;
    }
    return std::shared_ptr<SpilledBody>(new SpilledBody(std::move(fd)));
}

SpilledBody::~SpilledBody() {
    if (map_) ::munmap(map_, size_);
}

bool SpilledBody::append(std::string_view bytes, std::string& error) {
    while (!bytes.empty()) {
        const ssize_t n = ::write(fd_.get(), bytes.data(), bytes.size());
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            error = std::string("cannot write a large body to its temporary file: ") + std::strerror(n < 0 ? errno : ENOSPC);
            return false;
        }
        bytes.remove_prefix(static_cast<std::size_t>(n));
        size_ += static_cast<std::size_t>(n);
    }
    return true;
}

bool SpilledBody::finish(std::string& error) {
    if (map_ || size_ == 0) return true;
    void* map = ::mmap(nullptr, size_, PROT_READ, MAP_SHARED, fd_.get(), 0);
    if (map == MAP_FAILED) {
        error = std::string("cannot map a large body: ") + std::strerror(errno);
        return false;
    }
    map_ = map;
    fd_.reset();  // the mapping keeps the file
    return true;
}

}  // namespace cspd
