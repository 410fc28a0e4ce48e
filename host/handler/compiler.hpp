// --compile: turns NAME.c / NAME.cpp into a shared object with the system compiler,
// the SDK's include path and the flags csp_add_handler uses. Blocking: run it on a
// thread of its own, never on an event loop.
#pragma once

#include <atomic>
#include <chrono>
#include <filesystem>
#include <string>
#include <sys/types.h>

namespace cspd {

struct CompileResult {
    bool ok = false;
    std::filesystem::path output;  ///< the .so, when ok
    std::string diagnostics;       ///< what the compiler said (file:line:column: ...), or why it did not run
    bool shared = false;           ///< another worker of this server compiled the same source: its result
    bool timed_out = false;
    bool rejected = false;         ///< the compiler ran and refused the source (not a time-out, a crash, no compiler)
};

class HandlerCompiler {
public:
    /// With a `shared_folder` (the master's), a source is compiled once per server: the first worker
    /// to meet it compiles a private copy of it under a lock, the others take the result.
    HandlerCompiler(std::filesystem::path sdk_include, std::filesystem::path scratch_dir,
                    std::chrono::seconds time_limit, std::filesystem::path shared_folder = {});

    /// Compiles `source` into a fresh file in the scratch folder. The compiler runs in a process
    /// group of its own, whose id `running` holds while it runs; setting `cancel` (then killing
    /// that group) stops it, and a cancel that comes before the group exists is seen after spawning.
    CompileResult compile(const std::string& name, const std::filesystem::path& source, std::atomic<pid_t>& running,
                          const std::atomic<bool>& cancel) const;

    /// Removes from `server_folder` the shared results older than `age` whose lock nobody holds; how many.
    static std::size_t sweep(const std::filesystem::path& server_folder, std::chrono::seconds age);

    /// The SDK headers beside an installed binary, else those of the source tree it was built from.
    static std::filesystem::path default_sdk_include();

private:
    /// Runs the compiler on `source`; `quote_dir` is where its #include "..." files are; with
    /// `depends`, the headers it reads are listed there (-MMD).
    CompileResult run_compiler(const std::string& name, const std::filesystem::path& source,
                               const std::filesystem::path& quote_dir, std::atomic<pid_t>& running,
                               const std::atomic<bool>& cancel, const std::filesystem::path& depends = {}) const;
    /// compile() through the shared folder.
    CompileResult compile_once(const std::string& name, const std::filesystem::path& source,
                               std::atomic<pid_t>& running, const std::atomic<bool>& cancel) const;

    std::filesystem::path sdk_include_;
    std::filesystem::path scratch_dir_;
    std::chrono::seconds time_limit_;
    std::filesystem::path shared_;
};

}  // namespace cspd
