#include "handler/compile_jobs.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include <signal.h>

#include <atomic>
#include <thread>

namespace cspd {

struct CompileJobs::Job {
    std::thread thread;
    std::atomic<pid_t> pid{-1};  // the compiler's process group while it runs
    std::atomic<bool> cancel{false};
    bool running = false;
    bool again = false;  // the source changed while it compiled
};

CompileJobs::CompileJobs(boost::asio::io_context& io, const HandlerCompiler& compiler) : io_(io), compiler_(compiler) {}

CompileJobs::~CompileJobs() { stop(); }

bool CompileJobs::running(const std::string& name) const {
    const auto it = jobs_.find(name);
    return it != jobs_.end() && it->second->running;
}

void CompileJobs::mark_again(const std::string& name) {
    if (const auto it = jobs_.find(name); it != jobs_.end()) it->second->again = true;
}

bool CompileJobs::take_again(const std::string& name) {
    const auto it = jobs_.find(name);
    if (it == jobs_.end() || !it->second->again) return false;
    it->second->again = false;
    return true;
}

void CompileJobs::start(const std::string& name, const std::filesystem::path& source, Done done) {
    auto& job = jobs_[name];
    if (job && job->thread.joinable()) job->thread.join();  // finished: its Done has run
    job = std::make_shared<Job>();
    job->running = true;
    job->thread = std::thread([this, job, name, source, done = std::move(done)]() mutable {
        CompileResult result = compiler_.compile(name, source, job->pid, job->cancel);
        boost::asio::post(io_, [this, job, done = std::move(done), result = std::move(result)]() mutable {
            job->running = false;
            if (!stopped_) done(std::move(result));
        });
    });
}

void CompileJobs::stop() {
    stopped_ = true;
    for (auto& [name, job] : jobs_) {
        job->cancel = true;
        if (pid_t pid = job->pid; pid > 0) ::kill(-pid, SIGKILL);
        if (job->thread.joinable()) job->thread.join();
    }
}

} // namespace cspd
