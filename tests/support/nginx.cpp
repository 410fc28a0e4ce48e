#include "nginx.hpp"

#include "http_client.hpp"
#include "test_server.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <stdexcept>
#include <vector>

extern char** environ;

namespace cspd::test {

unsigned short free_port() {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address);
    socklen_t size = sizeof address;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &size);
    ::close(fd);
    return ntohs(address.sin_port);
}

Nginx::Nginx(const std::string& http_block, const std::string& main_block) : port_(free_port()) {
    const auto with_port = [this](std::string block) {
        for (std::size_t at; (at = block.find("@PORT@")) != std::string::npos;) block.replace(at, 6, std::to_string(port_));
        return block;
    };
    const std::string block = with_port(http_block);
    std::ofstream conf(dir_ / "nginx.conf");
    conf << with_port(main_block) << "\n";
    conf << (::geteuid() == 0 ? "user root;\n" : "") << "daemon off;\nworker_processes 1;\npid "
         << (dir_ / "nginx.pid").string() << ";\nerror_log " << (dir_ / "error.log").string()
         << " warn;\nevents { worker_connections 1024; }\nhttp {\n  access_log off;\n";
    for (const char* temp : {"client_body", "proxy", "fastcgi", "uwsgi", "scgi"})
        conf << "  " << temp << "_temp_path " << (dir_ / temp).string() << ";\n";
    conf << block << "\n}\n";
    conf.close();
    std::vector<std::string> args{"/usr/sbin/nginx", "-p", dir_.path().string(), "-c", (dir_ / "nginx.conf").string()};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    if (::posix_spawn(&pid_, argv[0], nullptr, nullptr, argv.data(), environ) != 0)
        throw std::runtime_error("cannot start /usr/sbin/nginx (apt-get install nginx-light)");
    const auto answers = [&] {
        try {
            return fetch(port_, "/-/healthy").has_value();
        } catch (const std::exception&) {  // not listening yet
            return false;
        }
    };
    if (!eventually(answers, std::chrono::seconds(10))) throw std::runtime_error("nginx did not start: " + error_log());
}

Nginx::~Nginx() {
    ::kill(pid_, SIGTERM);
    ::waitpid(pid_, nullptr, 0);
}

std::string Nginx::error_log() const { return read_file(dir_ / "error.log"); }

}  // namespace cspd::test
