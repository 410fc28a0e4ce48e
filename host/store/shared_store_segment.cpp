#include "store/shared_store.hpp"

#include "store/shared_store_layout.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <bit>
#include <stdexcept>
#include <string>
#include <system_error>
#include <utility>

namespace cspd {

namespace {
std::size_t table_size_for(const StoreLimits& limits) { return std::bit_ceil(std::max<std::size_t>(2 * limits.entries, 2)); }

std::size_t mapping_bytes(const StoreLimits& limits, std::size_t header_bytes) {
    return header_bytes + table_size_for(limits) * slot_bytes_for(limits);
}

void* map_store(int fd, std::size_t bytes) {
    void* memory = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (memory == MAP_FAILED) throw std::system_error(errno, std::system_category(), "mmap of the shared store");
    return memory;
}
}  // namespace

SharedStore SharedStore::create(const StoreLimits& limits) {
    if (limits.entries == 0) throw std::invalid_argument("a shared store needs at least one entry");
    const std::size_t header_bytes = (sizeof(Header) + 63) & ~std::size_t(63);
    const std::size_t bytes = mapping_bytes(limits, header_bytes);
    UniqueFd fd(::memfd_create("cspd-store", MFD_CLOEXEC));
    if (!fd) throw std::system_error(errno, std::system_category(), "memfd_create");
    // Sparse: pages the table never touches take no memory.
    if (::ftruncate(fd.get(), static_cast<off_t>(bytes)) != 0)
        throw std::system_error(errno, std::system_category(), "sizing the shared store");
    void* memory = map_store(fd.get(), bytes);
    auto* header = static_cast<Header*>(memory);
    header->magic = kStoreMagic;
    header->layout = kStoreLayout;
    header->entries = limits.entries;
    header->value_max = limits.value_max;
    header->table_size = table_size_for(limits);
    header->slot_bytes = slot_bytes_for(limits);
    header->used = 0;
    header->last_sweep_ms = 0;
    header->owners.reset(limits.quota());
    pthread_mutexattr_t attributes;
    pthread_mutexattr_init(&attributes);
    pthread_mutexattr_setpshared(&attributes, PTHREAD_PROCESS_SHARED);
    pthread_mutexattr_setrobust(&attributes, PTHREAD_MUTEX_ROBUST);
    pthread_mutex_init(&header->mutex, &attributes);
    pthread_mutexattr_destroy(&attributes);
    return SharedStore(std::move(fd), memory, bytes, limits);
}

SharedStore SharedStore::attach(int fd, const StoreLimits& limits) {
    ::fcntl(fd, F_SETFD, FD_CLOEXEC);
    UniqueFd owned(fd);
    const std::size_t header_bytes = (sizeof(Header) + 63) & ~std::size_t(63);
    const std::size_t bytes = mapping_bytes(limits, header_bytes);
    // Mapping past a shorter file would raise SIGBUS at the first read, not an error here.
    struct stat file {};
    if (::fstat(fd, &file) != 0 || static_cast<std::size_t>(file.st_size) != bytes)
        throw std::runtime_error("descriptor " + std::to_string(fd) + " is not a shared store of these limits");
    void* memory = map_store(fd, bytes);
    const auto* header = static_cast<const Header*>(memory);
    if (header->magic != kStoreMagic || header->layout != kStoreLayout || header->entries != limits.entries ||
        header->value_max != limits.value_max || header->owners.quota != limits.quota()) {
        ::munmap(memory, bytes);
        throw std::runtime_error("descriptor " + std::to_string(fd) + " is not a shared store of these limits");
    }
    return SharedStore(std::move(owned), memory, bytes, limits);
}

SharedStore::SharedStore(UniqueFd fd, void* memory, std::size_t bytes, const StoreLimits& limits)
    : fd_(std::move(fd)), memory_(memory), bytes_(bytes), limits_(limits), header_(static_cast<Header*>(memory)) {}

SharedStore::SharedStore(SharedStore&& other) noexcept
    : fd_(std::move(other.fd_)), memory_(std::exchange(other.memory_, nullptr)), bytes_(other.bytes_),
      limits_(other.limits_), header_(std::exchange(other.header_, nullptr)), clock_(other.clock_) {}

SharedStore::~SharedStore() {
    if (memory_) ::munmap(memory_, bytes_);
}

}  // namespace cspd
