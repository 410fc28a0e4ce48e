// A request body too large to keep in memory (over --body-memory, up to --max-body): written to
// an unnamed temporary file as it arrives, then mapped read-only, so the handler sees it as one
// csp_str like any body and the kernel pages it in and out. The file has no name (O_TMPFILE, or
// unlinked at once): it goes when the last holder of the mapping lets go, whatever happens.
#pragma once

#include "common/unique_fd.hpp"

#include <cstddef>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

namespace cspd {

class SpilledBody {
public:
    /// A new empty body in `folder`; null (with `error` set) if no file can be made there.
    static std::shared_ptr<SpilledBody> create(const std::filesystem::path& folder, std::string& error);
    ~SpilledBody();
    SpilledBody(const SpilledBody&) = delete;
    SpilledBody& operator=(const SpilledBody&) = delete;

    /// Appends bytes; false (with `error` set) if the file cannot take them (a full disk).
    bool append(std::string_view bytes, std::string& error);
    /// Maps what was written; false (with `error` set) if it cannot be mapped.
    bool finish(std::string& error);

    std::size_t size() const { return size_; }
    /// The whole body, after finish().
    std::string_view view() const { return {static_cast<const char*>(map_), size_}; }

private:
    explicit SpilledBody(UniqueFd fd) : fd_(std::move(fd)) {}

    UniqueFd fd_;
    std::size_t size_ = 0;
    void* map_ = nullptr;
};

}  // namespace cspd
