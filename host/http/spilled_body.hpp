// A request body too large to keep in memory (over --body-memory, up to --max-body): written to
// an unnamed temporary file as it arrives, then mapped read-only, so the handler sees it as one
// csp_str like any body and the kernel pages it in and out. The file has no name (O_TMPFILE, or
// unlinked at once): it goes when the last holder of the mapping lets go, whatever happens.
//
// No one body may fill the folder: each may grow to its share of the space free when it began,
// that space divided among the bodies this process (a worker) is writing, itself, and one more
// (so even the first leaves half of it for the others). A client that holds its share by
// sending slowly is the connection's to cut (--min-body-rate).
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
    /// A new empty body in `folder` that will hold at least `expected` bytes; null with `error` set
    /// if no file can be made there, or (and `no_room` set) if `expected` is over its share.
    static std::shared_ptr<SpilledBody> create(const std::filesystem::path& folder, std::size_t expected,
                                               std::string& error, bool& no_room);
    ~SpilledBody();
    SpilledBody(const SpilledBody&) = delete;
    SpilledBody& operator=(const SpilledBody&) = delete;

    /// Appends bytes; false (with `error` set) if the file cannot take them (a full disk), or
    /// they are past the body's share (then over_share() too).
    bool append(std::string_view bytes, std::string& error);
    bool over_share() const { return over_share_; }
    /// Bodies being written in this process (created, not yet finished or dropped).
    static unsigned being_written();
    /// Maps what was written; false (with `error` set) if it cannot be mapped.
    bool finish(std::string& error);

    std::size_t size() const { return size_; }
    /// The whole body, after finish().
    std::string_view view() const { return {static_cast<const char*>(map_), size_}; }

private:
    SpilledBody(UniqueFd fd, std::size_t share);
    void done_writing();

    UniqueFd fd_;
    std::size_t size_ = 0;
    std::size_t share_;
    void* map_ = nullptr;
    bool writing_ = true;
    bool over_share_ = false;
};

}  // namespace cspd
