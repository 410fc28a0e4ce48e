// One loaded version of one handler: the library mapping, its descriptor and
// the state its init hook returned.
//
// Lifetime: shared_ptr. The registry and every event loop's table hold one;
// a request runs synchronously on its loop, so the loop's reference covers it.
// When the last holder lets go, cleanup runs and the library is unloaded.
#pragma once

#include "common/crash_context.hpp"

#include <csp/csp.h>

#include <cstdint>
#include <memory>
#include <string>

namespace cspd {

/// What identifies the file a version was loaded from; a changed file is a new version.
struct HandlerFileIdentity {
    std::uint64_t device = 0;
    std::uint64_t inode = 0;
    std::uint64_t size = 0;
    std::int64_t mtime_ns = 0;
    std::int64_t ctime_ns = 0;       ///< unlike mtime, no user can set it back: catches same-size same-mtime copies
    std::uint64_t content_hash = 0;  ///< FNV-1a 64 of the bytes, for logs and status

    bool same_file_as(const HandlerFileIdentity& o) const {
        return device == o.device && inode == o.inode && size == o.size && mtime_ns == o.mtime_ns &&
               ctime_ns == o.ctime_ns;
    }
};

class HandlerVersion {
public:
    /// `library` keeps the mapping alive; its deleter unloads it.
    HandlerVersion(std::string name, std::uint64_t sequence, HandlerFileIdentity file, std::shared_ptr<void> library,
                   const csp_handler_descriptor* descriptor, void* state);
    ~HandlerVersion();
    HandlerVersion(const HandlerVersion&) = delete;
    HandlerVersion& operator=(const HandlerVersion&) = delete;

    /// Calls the handler's entry point. Exceptions it throws propagate to the caller.
    int handle(const csp_request* request, csp_reply* reply) const { return descriptor_->handle(request, reply); }

    const std::string& name() const { return name_; }
    std::uint64_t sequence() const { return sequence_; }
    const HandlerFileIdentity& file() const { return file_; }
    void* state() const { return state_; }
    /// "hello.so#3 (8264 bytes, fnv 9ae1...)", for log lines.
    std::string describe() const;
    /// The same facts as plain data, for the crash reporter.
    const HandlerLabel& label() const { return label_; }

private:
    std::string name_;
    std::uint64_t sequence_;
    HandlerFileIdentity file_;
    std::shared_ptr<void> library_;  // declared before descriptor_: destroyed last
    const csp_handler_descriptor* descriptor_;
    void* state_;
    HandlerLabel label_;
};

}  // namespace cspd
