#include "postgres_server.hpp"

#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <system_error>

extern char** environ;

namespace cspd::test {
namespace {

// PostgreSQL will not run as root; .ci/setup creates this user for it.
constexpr const char* kOsUser = "cspd-test";

bool has_initdb(const std::filesystem::path& bin) {
    std::error_code ec;
    return std::filesystem::exists(bin / "initdb", ec) && std::filesystem::exists(bin / "pg_ctl", ec);
}

std::string pg_config_bindir() {
    std::unique_ptr<FILE, int (*)(FILE*)> out(::popen("pg_config --bindir 2>/dev/null", "r"), ::pclose);
    if (!out) return {};
    char line[4096] = {};
    if (!std::fgets(line, sizeof line, out.get())) return {};
    std::string text(line);
    while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
    return text;
}

}  // namespace

std::filesystem::path postgres_bin_dir() {
    if (std::filesystem::path bin = pg_config_bindir(); !bin.empty() && has_initdb(bin)) return bin;
    std::vector<std::filesystem::path> found;  // Debian: /usr/lib/postgresql/<major>/bin
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator("/usr/lib/postgresql", ec))
        if (has_initdb(entry.path() / "bin")) found.push_back(entry.path() / "bin");
    if (found.empty())
        throw std::runtime_error("no PostgreSQL server programs (initdb, pg_ctl): apt-get install postgresql");
    std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) {
        return std::atoi(a.parent_path().filename().c_str()) < std::atoi(b.parent_path().filename().c_str());
    });
    return found.back();
}

PostgresServer::PostgresServer()
    : bin_(postgres_bin_dir()), data_(dir_ / "data"), log_(dir_ / "postgres.log"), tools_log_(dir_ / "tools.log"),
      // Only a Unix socket in our own folder: no port is shared with anyone, this just names it.
      port_(20000 + static_cast<unsigned>(::getpid()) % 20000) {
    if (::geteuid() == 0) {
        const passwd* user = ::getpwnam(kOsUser);
        if (!user)
            throw std::runtime_error(std::string("PostgreSQL refuses to run as root, and there is no user ") +
                                     kOsUser + " to run it as: run .ci/setup");
        if (::chown(dir_.path().c_str(), user->pw_uid, user->pw_gid) != 0)
            throw std::system_error(errno, std::system_category(), "chown " + dir_.path().string());
    }
    start_or_throw("initdb", run("initdb", {"-D", data_.string(), "-U", kUser, "--auth=trust", "--no-sync",
                                            "--encoding=UTF8", "--locale=C", "--no-instructions"},
                                 tools_log_));
    std::ofstream conf(data_ / "postgresql.conf", std::ios::app);
    conf << "listen_addresses = ''\n"
         << "unix_socket_directories = '" << dir_.path().string() << "'\n"
         << "port = " << port_ << "\n"
         << "max_connections = 200\n"  // cspd's blocking pool alone may hold 64
         << "shared_buffers = 16MB\n"
         << "fsync = off\nsynchronous_commit = off\nfull_page_writes = off\n";  // a throwaway cluster
    conf.close();
    if (!conf) throw std::runtime_error("cannot write " + (data_ / "postgresql.conf").string());
    start();
    start_or_throw("createdb", run("createdb", {"-h", dir_.path().string(), "-p", std::to_string(port_), "-U", kUser,
                                                kDatabase},
                                   tools_log_));
}

PostgresServer::~PostgresServer() {
    if (!running_) return;
    try {
        stop();
    } catch (...) {
    }
    if (!running_) return;
    // pg_ctl could not stop it: end it at once (SIGQUIT) rather than leave it behind.
    std::ifstream pid_file(data_ / "postmaster.pid");
    pid_t pid = 0;
    if (pid_file >> pid && pid > 0) ::kill(pid, SIGQUIT);
}

void PostgresServer::start() {
    const int status = run("pg_ctl", {"-D", data_.string(), "-l", log_.string(), "-w", "-t", "60", "start"}, tools_log_);
    running_ = status == 0;
    start_or_throw("pg_ctl start", status);
}

void PostgresServer::stop() {
    if (run("pg_ctl", {"-D", data_.string(), "-m", "fast", "-w", "-t", "60", "stop"}, tools_log_) != 0)
        throw std::runtime_error("pg_ctl stop failed; its output and the server's log:\n" + log_tail());
    running_ = false;
}

void PostgresServer::start_or_throw(const char* what, int status) const {
    if (status == 0) return;
    throw std::runtime_error(std::string(what) + " failed (status " + std::to_string(status) +
                             "); its output and the server's log:\n" + log_tail());
}

void PostgresServer::export_environment() const {
    ::setenv("PGHOST", dir_.path().c_str(), 1);
    ::setenv("PGPORT", std::to_string(port_).c_str(), 1);
    ::setenv("PGUSER", kUser, 1);
    ::setenv("PGDATABASE", kDatabase, 1);
    for (const char* other : {"PGHOSTADDR", "PGSERVICE", "PGOPTIONS"}) ::unsetenv(other);  // they would win
}

std::string PostgresServer::conninfo() const {
    return "host=" + dir_.path().string() + " port=" + std::to_string(port_) + " user=" + kUser + " dbname=" + kDatabase;
}

std::string PostgresServer::log_tail(std::size_t bytes) const {
    std::string text;
    for (const auto& file : {tools_log_, log_}) {
        std::ifstream in(file);
        std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        text += "--- " + file.string() + "\n" + (all.size() > bytes ? all.substr(all.size() - bytes) : all);
    }
    return text;
}

int PostgresServer::run(const std::string& program, const std::vector<std::string>& args,
                        const std::filesystem::path& output) const {
    std::vector<std::string> command;
    if (::geteuid() == 0) command = {"runuser", "-u", kOsUser, "--"};
    command.push_back((bin_ / program).string());
    command.insert(command.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : command) argv.push_back(a.data());
    argv.push_back(nullptr);

    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 1, output.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    // A folder the server's user may enter (not root's home): PostgreSQL's tools check.
    posix_spawn_file_actions_addchdir_np(&actions, dir_.path().c_str());
    pid_t pid = -1;
    const int rc = ::posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) return -1;
    int status = 0;
    if (::waitpid(pid, &status, 0) != pid) return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace cspd::test
