// One event loop's read buffers: lent to a connection while it reads, given back when
// it goes idle, so an idle connection holds none. Loop thread only.
#pragma once

#include <cstddef>
#include <vector>

namespace cspd {

class BufferPool {
public:
    static constexpr std::size_t kBufferSize = 16 * 1024;
    /// Kept for reuse, enough for the busy connections of a loaded loop; the rest are unmapped.
    static constexpr std::size_t kPooled = 32;

    BufferPool() = default;
    ~BufferPool();
    BufferPool(const BufferPool&) = delete;
    BufferPool& operator=(const BufferPool&) = delete;

    /// A buffer of kBufferSize bytes; null when the system has no memory left.
    char* acquire() noexcept;
    void release(char* buffer) noexcept;

    std::size_t pooled() const { return free_.size(); }

private:
    std::vector<char*> free_;
};

}  // namespace cspd
