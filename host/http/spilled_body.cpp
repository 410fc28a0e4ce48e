#include "http/spilled_body.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>

namespace cspd {
namespace {
std::atomic<unsigned> g_being_written{0};
}  // namespace

unsigned SpilledBody::being_written() { return g_being_written.load(std::memory_order_relaxed); }

SpilledBody::SpilledBody(UniqueFd fd, std::size_t share) : fd_(std::move(fd)), share_(share) {
    g_being_written.fetch_add(1, std::memory_order_relaxed);
}

void SpilledBody::done_writing() {
    if (std::exchange(writing_, false)) g_being_written.fetch_sub(1, std::memory_order_relaxed);
}

std::shared_ptr<SpilledBody> SpilledBody::create(const std::filesystem::path& folder, std::size_t expected,
                                                 std::string& error, bool& no_room) {
    no_room = false;
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
    struct statvfs space {};
    std::size_t share = SIZE_MAX;  // a file system that cannot say: only its own limits
    if (::fstatvfs(fd.get(), &space) == 0)
        share = std::size_t(space.f_bavail) * space.f_frsize / (being_written() + 2);
    if (expected > share) {
        no_room = true;
        error = "a body of " + std::to_string(expected) + " bytes is over its share of the free space in " +
                folder.string() + " (" + std::to_string(share) + " bytes)";
        return nullptr;
    }
    return std::shared_ptr<SpilledBody>(new SpilledBody(std::move(fd), share));
}

SpilledBody::~SpilledBody() {
    done_writing();
    if (map_) ::munmap(map_, size_);
}

bool SpilledBody::append(std::string_view bytes, std::string& error) {
    if (bytes.size() > share_ - size_) {
        over_share_ = true;
        error = "a body grew past its share of the free space in the upload folder (" + std::to_string(share_) +
                " bytes)";
        return false;
    }
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
    done_writing();
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
