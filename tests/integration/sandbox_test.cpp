// The escape suite: a hostile handler (tests/handlers/escape.c) tries every way out of its worker
// it can, with the workers run as root (--user root) so that the account's own permissions stop
// nothing and only the sandbox does. Each attempt must end in EPERM or EACCES; meanwhile another
// handler answers every request, no worker dies, and each denial is counted and blamed on the
// handler by name. Then: the vetting process has the same sandbox; --sandbox-log-only reports
// and lets calls run; --no-sandbox is said loudly.
#include "command.hpp"
#include "http_client.hpp"
#include "test_server.hpp"
#include "temp_dir.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <set>
#include <thread>

namespace cspd::test {
namespace {
using namespace std::chrono_literals;

/// Landlock's ABI in this kernel (0: none), as the server asks it.
int landlock_abi() {
    const long abi = ::syscall(444 /* landlock_create_ruleset */, nullptr, 0, 1u /* ..._VERSION */);
    return abi > 0 ? static_cast<int>(abi) : 0;
}

class Sandbox : public ::testing::Test {
protected:
    void SetUp() override {
        if (::geteuid() != 0) GTEST_SKIP() << "needs root: it shows the sandbox refusing what root may do";
        // The server says so loudly at start; here there would be nothing to show.
        if (landlock_abi() == 0) GTEST_SKIP() << "this kernel has no Landlock (or it is off at boot)";
    }
    /// "NAME: OUTCOME" for one attempt, on `client`'s connection (one worker for all of them).
    static std::string attempt(HttpClient& client, const std::string& query) {
        const auto answer = client.get("/csp/escape?" + query);
        if (!answer) return "(no answer)";
        std::string body = answer->body;
        while (!body.empty() && body.back() == '\n') body.pop_back();
        return body;
    }
};

TEST_F(Sandbox, AHostileHandlerInAWorkerIsRefusedEveryWayOutWhileOthersServeOn) {
    TempDir outside;
    const auto certs = outside / "certs";
    const auto logs = outside / "logs";
    const auto data = outside / "data";
    std::filesystem::create_directories(certs);
    std::filesystem::create_directories(logs);
    std::ofstream(certs / "site.key") << "-----BEGIN PRIVATE KEY-----\n";
    ::chmod((certs / "site.key").c_str(), 0644);  // readable by anyone: only the sandbox keeps it out
    std::ofstream(outside / "secret.txt") << "not the handler's";

    TestServer server({"--user", "root", "--workers", "2", "--tls-port", "0", "--tls-self-signed", "--certs",
                       certs.string(), "--log-file",
                       (logs / "cspd.log").string(), "--data-dir", data.string()},
                      false);
    for (const char* name : {"escape.so", "echo.so"})
        std::filesystem::copy_file(test_handler(name), server.handlers() / name);
    server.start();
    const std::vector<pid_t> workers = server.worker_pids();
    ASSERT_EQ(workers.size(), 2u);

    // Another handler, asked all along: it must never fail.
    std::atomic<bool> done{false};
    std::atomic<int> served{0}, failed{0};
    std::thread neighbour([&] {
        HttpClient client(server.port());
        while (!done) {
            const auto answer = client.get("/csp/echo?q=1");
            (answer && answer->status == 200 ? served : failed)++;
        }
    });

    HttpClient client(server.port());
    const pid_t mine = std::stoi(attempt(client, "try=pid"));
    const pid_t sibling = mine == workers[0] ? workers[1] : workers[0];
    ASSERT_TRUE(mine == workers[0] || mine == workers[1]) << mine;
    const std::string sib = "&pid=" + std::to_string(sibling);
    const std::string master = "&pid=" + std::to_string(server.pid());
    const auto path = [](const std::filesystem::path& p) { return "&path=" + p.string(); };

    // Each attempt and the refusal it must meet.
    const std::vector<std::pair<std::string, std::string>> attempts = {
        {"try=execve", "execve: EPERM"},
        {"try=system", "system: the shell never ran"},
        {"try=posix_spawn", "posix_spawn: EPERM"},
        {"try=fork_exec", "fork_exec: EPERM"},
        {"try=read" + path("/etc/shadow"), "read: EACCES"},
        {"try=read" + path(certs / "site.key"), "read: EACCES"},
        {"try=read" + path(logs / "cspd.log"), "read: EACCES"},  // the master's log: appended to, never read
        {"try=read" + path(outside / "secret.txt"), "read: EACCES"},
        {"try=write" + path("/etc/cspd-escaped"), "write: EACCES"},
        {"try=write" + path(server.handlers() / "planted.so"), "write: EACCES"},
        {"try=write" + path(server.www() / "index.html"), "write: EACCES"},
        {"try=write" + path("/tmp/cspd-escaped"), "write: EACCES"},
        {"try=mkdir" + path("/var/tmp/cspd-escaped"), "mkdir: EACCES"},
        {"try=unlink" + path(outside / "secret.txt"), "unlink: EACCES"},
        {"try=symlink_read" + path("/etc/shadow"), "symlink_read: EACCES"},
        // A hard link would give the file the reach of the folder it lands in: Landlock answers EXDEV.
        {"try=hardlink" + path(outside / "secret.txt"), "hardlink: EXDEV"},  // same file system: only Landlock says no
        {"try=rename_out" + path(outside / "secret.txt"), "rename_out: EACCES"},
        {"try=ptrace" + sib, "ptrace: EPERM"},
        {"try=process_vm_readv" + sib, "process_vm_readv: EPERM"},
        {"try=proc_mem" + sib, "proc_mem: EACCES"},
        {"try=proc_environ" + sib, "proc_environ: EACCES"},
        {"try=read" + path("/proc/1/environ"), "read: EACCES"},
        {"try=mount", "mount: EPERM"},
        {"try=unshare_user", "unshare_user: EPERM"},
        {"try=unshare_net", "unshare_net: EPERM"},
        {"try=setns", "setns: EPERM"},
        {"try=chroot", "chroot: EPERM"},
        {"try=clone_newpid", "clone_newpid: EPERM"},
        {"try=bpf", "bpf: EPERM"},
        {"try=raw_socket", "raw_socket: EPERM"},
        {"try=packet_socket", "packet_socket: EPERM"},
        {"try=keyctl", "keyctl: EPERM"},
        {"try=perf_event_open", "perf_event_open: EPERM"},
        {"try=userfaultfd", "userfaultfd: EPERM"},
        {"try=personality", "personality: EPERM"},
        {"try=init_module", "init_module: EPERM"},
        {"try=kexec_load", "kexec_load: EPERM"},
        {"try=io_uring_setup", "io_uring_setup: EPERM"},
        {"try=silence_sigsys", "silence_sigsys: EPERM"},
#if defined(__x86_64__)
        {"try=int80", "int80: EPERM"},
#endif
    };
    for (const auto& [query, refused] : attempts) EXPECT_EQ(attempt(client, query), refused) << query;
    // Signals reach only the worker's own domain from Landlock 6 on (Linux 6.12); before, nothing
    // stops them (said at start), and a SIGKILL here would take the sibling or the master down.
    if (landlock_abi() >= 6) {
        EXPECT_EQ(attempt(client, "try=kill" + sib), "kill: EPERM");
        EXPECT_EQ(attempt(client, "try=kill" + master), "kill: EPERM");
    }
    EXPECT_EQ(attempt(client, "try=socket_family&family=38"), "socket_family: EPERM");  // AF_ALG
    EXPECT_EQ(attempt(client, "try=socket_family&family=16&protocol=4"), "socket_family: EPERM");  // netlink sock_diag
    EXPECT_EQ(attempt(client, "try=socket_family&family=2&type=10"), "socket_family: EPERM");  // SOCK_PACKET
    EXPECT_EQ(attempt(client, "try=chmod" + path("/etc/shadow")), "chmod: EPERM");
    EXPECT_EQ(attempt(client, "try=chown" + path("/etc/shadow")), "chown: EPERM");
    // Reported, not refused in a worker: code the handler writes and runs (JITs do). A jail is for that.
    EXPECT_EQ(attempt(client, "try=rwx_mmap"), "rwx_mmap: allowed");
    // What it may do: its own data folder (csp_request_data_dir), made for it, mode 0700.
    EXPECT_EQ(attempt(client, "try=data_dir"), (data / "escape").string() + " data_dir: allowed");
    EXPECT_EQ(read_file(data / "escape" / "note"), "kept");
    struct stat folder {};
    ASSERT_EQ(::stat((data / "escape").c_str(), &folder), 0);
    EXPECT_EQ(folder.st_mode & 0777, 0700u);

    done = true;
    neighbour.join();
    EXPECT_GT(served.load(), 0);
    EXPECT_EQ(failed.load(), 0);
    EXPECT_EQ(server.worker_pids(), workers);  // nobody died, nobody was replaced
    EXPECT_FALSE(std::filesystem::exists("/etc/cspd-escaped"));
    EXPECT_TRUE(std::filesystem::exists(outside / "secret.txt"));

    // Each EPERM above came from the filter, not from the kernel's own checks: counted by call.
    for (const char* call : {"execve", "process_vm_readv", "mount", "unshare", "setns", "chroot", "clone", "bpf",
                             "socket", "add_key", "perf_event_open", "userfaultfd", "personality", "init_module",
                             "kexec_load", "io_uring_setup", "chmod", "chown"})
        EXPECT_GE(metric(server.port(), std::string("cspd_sandbox_denied_total{handler=\"escape\",call=\"") + call + "\"}"), 1)
            << call;
#if defined(__x86_64__)
    EXPECT_EQ(metric(server.port(), "cspd_sandbox_denied_total{handler=\"escape\",call=\"other_arch\"}"), 1);
#endif
    // Counted by handler and call, and blamed by name in the log.
    EXPECT_GE(metric(server.port(), "cspd_sandbox_denied_total{handler=\"escape\",call=\"execve\"}"), 2);
    EXPECT_EQ(metric(server.port(), "cspd_sandbox_denied_total{handler=\"escape\",call=\"bpf\"}"), 1);
    EXPECT_EQ(metric(server.port(), "cspd_sandbox_denied_total{handler=\"echo\",call=\"bpf\"}"), -1);
    EXPECT_TRUE(server.wait_for_log("called execve (59) in a call: denied (EPERM)")) << server.log();
    EXPECT_NE(server.log().find("cspd: sandbox: handler escape #"), std::string::npos);
    // The new family reads as Prometheus reads it.
    const auto metrics = fetch(server.port(), "/metrics");
    ASSERT_TRUE(metrics);
    std::ofstream(outside / "metrics.txt") << metrics->body;
    EXPECT_EQ(run_command("promtool check metrics < " + (outside / "metrics.txt").string() + " > /dev/null 2>&1 && echo ok"),
              "ok\n");
    const auto status = fetch(server.port(), "/-/status");
    ASSERT_TRUE(status);
    const auto report = nlohmann::json::parse(status->body);
    EXPECT_EQ(report["sandbox"]["enabled"], true);
    EXPECT_EQ(report["sandbox"]["exec"], false);
    EXPECT_GT(report["sandbox"]["landlock"].get<int>(), 0);
    bool listed = false;
    for (const auto& denial : report["sandbox"]["denied"])
        listed = listed || (denial["handler"] == "escape" && denial["call"] == "mount" && denial["count"] == 1);
    EXPECT_TRUE(listed) << report["sandbox"].dump();
}

TEST_F(Sandbox, VettingProcessesHaveTheWorkersSandbox) {
    TestServer server({"--user", "root", "--workers", "1"}, false);
    std::filesystem::copy_file(test_handler("escape.so"), server.handlers() / "escape.so");
    std::ofstream(server.handlers() / "escape.conf") << "vetting = execve\n";
    server.start();
    EXPECT_TRUE(server.wait_for_log("escape init while vetted: execve EPERM")) << server.log();
    EXPECT_TRUE(server.wait_for_log("sandbox: handler escape #1 called execve (59) in init: denied (EPERM)"))
        << server.log();
    const auto pid = fetch(server.port(), "/csp/escape?try=pid");
    ASSERT_TRUE(pid);
    EXPECT_EQ(pid->status, 200);  // vetted, and served
}

TEST_F(Sandbox, TheSingleProcessIsSandboxedToo) {
    TestServer server({"--user", "root", "--single-process"}, false);
    std::filesystem::copy_file(test_handler("escape.so"), server.handlers() / "escape.so");
    server.start();
    HttpClient client(server.port());
    EXPECT_EQ(attempt(client, "try=execve"), "execve: EPERM");
    EXPECT_EQ(attempt(client, "try=read&path=/etc/shadow"), "read: EACCES");
    if (landlock_abi() >= 6) {
        EXPECT_EQ(attempt(client, "try=kill&pid=1"), "kill: EPERM");  // init: root may, the rules do not
    }
    EXPECT_EQ(metric(server.port(), "cspd_sandbox_denied_total{handler=\"escape\",call=\"execve\"}"), 1);
}

TEST_F(Sandbox, LogOnlyReportsAndCountsWhatItWouldDenyAndLetsItRun) {
    TestServer server({"--user", "root", "--workers", "1", "--sandbox-log-only"}, false);
    std::filesystem::copy_file(test_handler("escape.so"), server.handlers() / "escape.so");
    server.start();
    EXPECT_TRUE(server.wait_for_log("--sandbox-log-only: denied calls are logged and counted, then run"));
    HttpClient client(server.port());
    EXPECT_EQ(attempt(client, "try=personality"), "personality: allowed");
    EXPECT_EQ(attempt(client, "try=read&path=/etc/shadow"), "read: allowed");  // no file rules then
    EXPECT_TRUE(server.wait_for_log("called personality (135) in a call: allowed (--sandbox-log-only)"))
        << server.log();
    EXPECT_EQ(metric(server.port(), "cspd_sandbox_denied_total{handler=\"escape\",call=\"personality\"}"), 1);
}

TEST_F(Sandbox, OffIsSaidAtStartAndLetsAllThrough) {
    TestServer server({"--user", "root", "--workers", "1", "--no-sandbox"}, false);
    std::filesystem::copy_file(test_handler("escape.so"), server.handlers() / "escape.so");
    server.start();
    EXPECT_TRUE(server.wait_for_log("sandbox: off (--no-sandbox)"));
    HttpClient client(server.port());
    EXPECT_EQ(attempt(client, "try=personality"), "personality: allowed");
    EXPECT_EQ(metric(server.port(), "cspd_sandbox_denied_total{handler=\"escape\",call=\"personality\"}"), -1);
}

// A worker whose vetting fork server is killed cannot start another under its filter: it refuses
// new versions rather than load them untried, and asks for a successor, which vets and serves them.
TEST_F(Sandbox, AWorkerThatLostItsVettingForkServerIsReplacedAndTheVersionVetted) {
    TestServer server({"--user", "root", "--workers", "1"});
    std::filesystem::copy_file(test_handler("echo.so"), server.handlers() / "echo.so");
    ASSERT_TRUE(eventually([&] { return fetch(server.port(), "/csp/echo").value_or(HttpResponse{}).status == 200; }, 5s));
    const pid_t worker = server.worker_pid();
    const std::string children = run_command("pgrep -P " + std::to_string(worker) + " -f '__vet-server'");
    ASSERT_FALSE(children.empty()) << "no vetting fork server under worker " << worker;
    ::kill(std::stoi(children), SIGKILL);
    install_by_rename(test_handler("escape.so"), server.handlers() / "escape.so");
    EXPECT_TRUE(server.wait_for_log("its vetting fork server is gone; a successor starts with a new one", 10s))
        << server.log();
    EXPECT_TRUE(eventually([&] { return fetch(server.port(), "/csp/escape?try=pid").value_or(HttpResponse{}).status == 200; },
                           10s))
        << server.log();
    EXPECT_EQ(server.log().find("loading it untried"), std::string::npos);
    EXPECT_EQ(fetch(server.port(), "/csp/echo")->status, 200);
}

// NAME.conf declares more (a folder to write, programs to start): the workers that run refuse the
// version, successors start with the wider sandbox and serve it, and nothing fails meanwhile.
TEST_F(Sandbox, AHandlerThatDeclaresMoreIsServedByWorkersWithTheWiderSandbox) {
    TempDir reports, certs;
    TestServer server({"--user", "root", "--workers", "2", "--tls-port", "0", "--tls-self-signed", "--certs",
                       certs.path().string(), "--status-listen", "127.0.0.1:0"});
    std::filesystem::copy_file(test_handler("echo.so"), server.handlers() / "echo.so");
    ASSERT_TRUE(eventually([&] { return fetch(server.port(), "/csp/echo").value_or(HttpResponse{}).status == 200; }, 5s));
    const std::vector<pid_t> before = server.worker_pids();

    std::ofstream(server.handlers() / "escape.conf")
        << "sandbox.write = " << reports.path().string() << "\nsandbox.exec = true\n";
    install_by_rename(test_handler("escape.so"), server.handlers() / "escape.so");
    EXPECT_TRUE(server.wait_for_log("beyond this worker's sandbox: workers with a wider one are starting", 5s))
        << server.log();
    EXPECT_TRUE(server.wait_for_log("a successor starts with a wider one", 5s)) << server.log();
    // Served by successors only, once each has taken over (the workers that ran drain).
    const auto served_by_successors = [&] {
        std::set<pid_t> serving;  // both workers' successors (each of 16 connections lands on either)
        for (int i = 0; i < 16; ++i) {
            const auto answer = fetch(server.port(), "/csp/escape?try=pid");
            if (!answer || answer->status != 200) return false;
            if (std::count(before.begin(), before.end(), std::stoi(answer->body))) return false;
            serving.insert(std::stoi(answer->body));
        }
        return serving.size() == 2;
    };
    ASSERT_TRUE(eventually(served_by_successors, 10s)) << server.log();
    EXPECT_EQ(fetch(server.port(), "/csp/escape?try=write&path=" + (reports / "note").string())->body, "write: allowed\n");
    EXPECT_EQ(fetch(server.port(), "/csp/escape?try=posix_spawn")->body, "posix_spawn: allowed\n");
    EXPECT_EQ(fetch(server.port(), "/csp/escape?try=read&path=/etc/shadow")->body, "read: EACCES\n");  // no more than declared
    const std::string declared = "write " + reports.path().string() + ", exec";
    EXPECT_TRUE(server.wait_for_log("sandbox: the handlers declared " + declared));
    // The status address says what each worker's handlers declared (paths: not on the public port).
    const auto report = nlohmann::json::parse(fetch(server.status_port(), "/-/status")->body);
    int widened = 0;
    for (const auto& worker : report["workers"]) widened += worker.value("sandbox_declared", "") == declared;
    EXPECT_EQ(widened, 2) << report["workers"].dump();
    EXPECT_EQ(fetch(server.port(), "/-/status")->body.find(reports.path().string()), std::string::npos);
    EXPECT_EQ(fetch(server.port(), "/csp/echo")->status, 200);

    // What no sandbox grants is refused for good, with the reason, and starts no successor.
    std::ofstream(server.handlers() / "escape.conf") << "sandbox.read = " << certs.path().string() << "\n";
    EXPECT_TRUE(server.wait_for_log("holds or lies beneath --certs: no handler may read the keys", 5s)) << server.log();
    std::ofstream(server.handlers() / "escape.conf") << "sandbox.read = relative/path\n";
    EXPECT_TRUE(server.wait_for_log("sandbox.read: relative/path is not an absolute path", 5s)) << server.log();
}

}  // namespace
}  // namespace cspd::test
