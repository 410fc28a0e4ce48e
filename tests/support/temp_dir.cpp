#include "temp_dir.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <system_error>

namespace cspd::test {

TempDir::TempDir() {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/cspd-test-XXXXXX";
    if (!::mkdtemp(pattern.data())) throw std::system_error(errno, std::system_category(), "mkdtemp");
    path_ = pattern;
}

TempDir::~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
}

std::filesystem::path test_handler(const std::string& file_name) {
    return std::filesystem::path(CSPD_TEST_HANDLERS_DIR) / file_name;
}

std::filesystem::path shipped_handler(const std::string& file_name) {
    return std::filesystem::path(CSPD_HANDLERS_DIR) / file_name;
}

std::string read_file(const std::filesystem::path& file) {
    std::ifstream in(file, std::ios::binary);
    if (!in) throw std::runtime_error("cannot read " + file.string());
    std::ostringstream bytes;
    bytes << in.rdbuf();
    return bytes.str();
}

namespace {
void write_file(const std::filesystem::path& to, const std::string& bytes, int flags) {
    int fd = ::open(to.c_str(), flags | O_WRONLY | O_CLOEXEC, 0644);
    if (fd < 0) throw std::system_error(errno, std::system_category(), "open " + to.string());
    std::size_t done = 0;
    while (done < bytes.size()) {
        ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
        if (n <= 0) {
            ::close(fd);
            throw std::system_error(errno, std::system_category(), "write " + to.string());
        }
        done += static_cast<std::size_t>(n);
    }
    ::close(fd);
}
}  // namespace

void install_by_rename(const std::filesystem::path& from, const std::filesystem::path& to) {
    const std::filesystem::path temporary = to.parent_path() / ("." + to.filename().string() + ".part");
    write_file(temporary, read_file(from), O_CREAT | O_TRUNC);
    std::filesystem::rename(temporary, to);
}

void install_in_place(const std::filesystem::path& from, const std::filesystem::path& to) {
    write_file(to, read_file(from), O_CREAT | O_TRUNC);
}

}  // namespace cspd::test
