// One loaded version of one handler: the library mapping, its descriptor and
// the state its init hook returned.
//
// Lifetime: shared_ptr. The registry and every event loop's table hold one;
// a request runs synchronously on its loop, so the loop's reference covers it, and a
// call answered later pins its version until its answer is sent.
// When the last holder lets go, cleanup runs and the library is unloaded, on that
// holder's thread: the control thread (the registry, a fallback), an event loop (its
// table, an answer that came later: a handler's or pool thread's reference moves onto
// the loop with the answer), or the main thread at exit once the loops have stopped.
#pragma once

#include "common/crash_context.hpp"
#include "handler/abi_v1.hpp"
#include "handler/log_budget.hpp"

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
    std::uint64_t content_hash = 0;  ///< FNV-1a 64 of the bytes (and the configuration's, if any), for logs and status
    std::uint64_t config_stamp = 0;  ///< which NAME.conf / NAME.json file was beside it (0: none)

    bool same_file_as(const HandlerFileIdentity& o) const {
        return device == o.device && inode == o.inode && size == o.size && mtime_ns == o.mtime_ns &&
               ctime_ns == o.ctime_ns && config_stamp == o.config_stamp;
    }
};

/// Which SDK ABI a handler was built against: the host fills that ABI's structs for it.
enum class HandlerAbi : std::uint8_t { v1, v2 };

/// What the host calls in a loaded library.
struct HandlerEntry {
    HandlerAbi abi = HandlerAbi::v2;
    unsigned minor = 0;                                          ///< ABI 2.minor
    csp_handle_fn handle = nullptr;                              ///< ABI 2
    int (*handle_v1)(const abi1::request*, csp_reply*) = nullptr;  ///< ABI 1
    csp_cleanup_fn cleanup = nullptr;
    bool blocking = false;                                       ///< CSP_HANDLER_BLOCKING: never on a loop
    bool reads_config = false;  ///< 2.2 init with a context: NAME.conf / NAME.json is part of the version
};

class HandlerVersion {
public:
    /// `library` keeps the mapping alive; its deleter unloads it.
    HandlerVersion(std::string name, std::uint64_t sequence, HandlerFileIdentity file, std::shared_ptr<void> library,
                   HandlerEntry entry, void* state);
    ~HandlerVersion();
    HandlerVersion(const HandlerVersion&) = delete;
    HandlerVersion& operator=(const HandlerVersion&) = delete;

    /// Calls the handler's entry point with the request in its ABI's layout (the other may be
    /// null). Exceptions it throws propagate to the caller.
    int handle(const csp_request* request, const abi1::request* request_v1, csp_reply* reply) const {
        return entry_.abi == HandlerAbi::v1 ? entry_.handle_v1(request_v1, reply) : entry_.handle(request, reply);
    }

    HandlerAbi abi() const { return entry_.abi; }
    /// The 2.minor it was built against (0 for ABI 1): what it knows of the host's answers.
    unsigned minor() const { return entry_.abi == HandlerAbi::v2 ? entry_.minor : 0; }
    bool blocking() const { return entry_.blocking; }
    bool reads_config() const { return entry_.reads_config; }
    const std::string& name() const { return name_; }
    std::uint64_t sequence() const { return sequence_; }
    const HandlerFileIdentity& file() const { return file_; }
    void* state() const { return state_; }
    /// "hello.so#3 (8264 bytes, fnv 9ae1...)", for log lines.
    std::string describe() const;
    /// The same facts as plain data, for the crash reporter.
    const HandlerLabel& label() const { return label_; }
    /// How many csp_log lines it may still write (--handler-log-rate).
    LogBudget& log_budget() const { return log_budget_; }

private:
    std::string name_;
    std::uint64_t sequence_;
    HandlerFileIdentity file_;
    std::shared_ptr<void> library_;  // declared before entry_: destroyed last
    HandlerEntry entry_;
    void* state_;
    HandlerLabel label_;
    mutable LogBudget log_budget_;
};

}  // namespace cspd
