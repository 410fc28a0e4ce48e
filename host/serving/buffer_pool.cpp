#include "serving/buffer_pool.hpp"

#include <sys/mman.h>

namespace cspd {

BufferPool::~BufferPool() {
    for (char* buffer : free_) ::munmap(buffer, kBufferSize);
}

// Buffers are mapped, not malloc'ed: unmapping gives the memory back to the system at
// once, where freed heap chunks between live objects would keep an idle server's RSS high.
char* BufferPool::acquire() noexcept {
    if (!free_.empty()) {
        char* buffer = free_.back();
        free_.pop_back();
        return buffer;
    }
    void* memory = ::mmap(nullptr, kBufferSize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return memory == MAP_FAILED ? nullptr : static_cast<char*>(memory);
}

void BufferPool::release(char* buffer) noexcept {
    if (free_.size() < kPooled) {
        try {
            free_.push_back(buffer);  // reserved below kPooled: does not allocate after the first growth
            return;
        } catch (...) {}
    }
    ::munmap(buffer, kBufferSize);
}

}  // namespace cspd
