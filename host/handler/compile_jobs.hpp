// --compile's compilations: one thread each, at most one at a time per handler name, the
// result posted back to the watcher's io_context. Stopping kills every compiler's process
// group and joins the threads. Control thread only (but the threads it starts).
#pragma once

#include "handler/compiler.hpp"

#include <functional>
#include <map>
#include <memory>
#include <string>

namespace boost::asio {
class io_context;
}

namespace cspd {

class CompileJobs {
public:
    /// Receives the result on the io_context's thread.
    using Done = std::function<void(CompileResult)>;

    CompileJobs(boost::asio::io_context& io, const HandlerCompiler& compiler);
    ~CompileJobs();
    CompileJobs(const CompileJobs&) = delete;
    CompileJobs& operator=(const CompileJobs&) = delete;

    /// True while `name` compiles; its Done has not run yet.
    bool running(const std::string& name) const;
    /// While `name` compiles: remember that its files changed meanwhile.
    void mark_again(const std::string& name);
    /// After its Done: whether the files changed while it compiled (and forget it).
    bool take_again(const std::string& name);

    /// Compiles `source` for `name` on a thread of its own; `name` must not be running.
    void start(const std::string& name, const std::filesystem::path& source, Done done);

    /// Kills what runs and waits for the threads; no Done runs after this.
    void stop();

private:
    struct Job;
    boost::asio::io_context& io_;
    const HandlerCompiler& compiler_;
    std::map<std::string, std::shared_ptr<Job>> jobs_;
    bool stopped_ = false;
};

} // namespace cspd
