#include "handler/compiler.hpp"

#include "handler/handler_flags.hpp"

#include "common/fnv1a.hpp"
#include "common/unique_fd.hpp"
#include "handler/process_group.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <sstream>
#include <thread>
#include <vector>

#ifndef CSPD_SOURCE_SDK_INCLUDE
#define CSPD_SOURCE_SDK_INCLUDE "sdk/include"
#endif

namespace cspd {
namespace {

std::string compiler_for(const std::filesystem::path& source) {
    const bool cpp = source.extension() == ".cpp";
    const char* env = std::getenv(cpp ? "CXX" : "CC");
    return env && *env ? env : (cpp ? "c++" : "cc");
}

bool is_gcc(const std::string& compiler) { return compiler.find("clang") == std::string::npos; }

// Names in the scratch folder, unique within this process.
std::atomic<unsigned> counter{0};

bool read_file(const std::filesystem::path& path, std::string& out) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return false;
    std::ostringstream text;
    text << in.rdbuf();
    out = text.str();
    return true;
}

/// `path` as a C string literal's contents.
std::string escaped(const std::string& path) {
    std::string out;
    for (char c : path) {
        if (c == '\\' || c == '"') out += '\\';
        out += c;
    }
    return out;
}

/// Waits for the lock at `path` (polling, so that `cancel` is seen); an empty descriptor if it
/// cannot be made (then nothing is shared, and the caller compiles anyway).
UniqueFd take_lock(const std::filesystem::path& path, const std::atomic<bool>& cancel) {
    UniqueFd lock(::open(path.c_str(), O_CREAT | O_RDWR | O_CLOEXEC | O_NOFOLLOW, 0600));
    if (!lock) return lock;
    while (!cancel && ::flock(lock.get(), LOCK_EX | LOCK_NB) != 0) {
        if (errno != EWOULDBLOCK && errno != EINTR) return {};
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return lock;
}

/// A private file at `to` with the bytes of `from`: a copy, never a link (a link changes the
/// inode's ctime, which to a worker reading another link of it looks like a file being written).
bool place(const std::filesystem::path& from, const std::filesystem::path& to) {
    std::error_code ec;
    return std::filesystem::copy_file(from, to, ec);
}

// A refusal by the compiler is reused by workers that meet the same source within this long.
constexpr auto kFailureShared = std::chrono::seconds(30);

bool younger_than(const std::filesystem::path& path, std::chrono::seconds age) {
    std::error_code ec;
    const auto written = std::filesystem::last_write_time(path, ec);
    return !ec && std::filesystem::file_time_type::clock::now() - written < age;
}

/// "path size mtime" of each file, hashed: whether any of them changed.
std::uint64_t files_signature(const std::vector<std::string>& files) {
    std::uint64_t hash = kFnv1a64Start;
    for (const auto& file : files) {
        struct stat st {};
        const bool there = ::stat(file.c_str(), &st) == 0;
        const std::string line = file + " " + std::to_string(there ? st.st_size : -1) + " " +
                                 std::to_string(there ? st.st_mtim.tv_sec : 0) + "." +
                                 std::to_string(there ? st.st_mtim.tv_nsec : 0) + "\n";
        hash = fnv1a64(line, hash);
    }
    return hash;
}

/// Writes beside a shared result the headers the compiler read (from its -MMD file, without the
/// private copy of the source itself) and their signature; false if that cannot be done.
bool record_headers(const std::filesystem::path& depends, const std::filesystem::path& copy,
                    const std::filesystem::path& record) {
    std::string text;
    if (!read_file(depends, text)) return false;
    std::vector<std::string> files;
    std::istringstream words(text);
    for (std::string word; words >> word;)
        if (!word.ends_with(":") && word != "\\" && word != copy.string()) files.push_back(word);
    std::ostringstream out;
    for (const auto& file : files) out << file << '\n';
    out << "signature " << files_signature(files) << '\n';
    const std::filesystem::path scratch = record.parent_path() / ("." + record.filename().string() + "." +
                                                                  std::to_string(::getpid()));
    std::ofstream(scratch) << out.str();
    std::error_code ec;
    std::filesystem::rename(scratch, record, ec);
    return !ec;
}

/// Whether the headers a shared result was built with are as they were.
bool headers_unchanged(const std::filesystem::path& record) {
    std::ifstream in(record);
    std::vector<std::string> files;
    for (std::string line; std::getline(in, line);) {
        if (line.starts_with("signature "))
            return std::to_string(files_signature(files)) == line.substr(10);
        files.push_back(line);
    }
    return false;
}

/// Puts a compiled library where the other workers look for it, whole (a rename).
void publish(const std::filesystem::path& output, const std::filesystem::path& shared) {
    const std::filesystem::path scratch = shared.parent_path() / ("." + shared.filename().string() + "." +
                                                                  std::to_string(::getpid()));
    std::error_code ec;
    if (!place(output, scratch)) return;
    std::filesystem::rename(scratch, shared, ec);
    if (ec) std::filesystem::remove(scratch, ec);
}

}  // namespace

HandlerCompiler::HandlerCompiler(std::filesystem::path sdk_include, std::filesystem::path scratch_dir,
                                 std::chrono::seconds time_limit, std::filesystem::path shared_folder)
    : sdk_include_(std::move(sdk_include)), scratch_dir_(std::move(scratch_dir)), time_limit_(time_limit) {
    if (shared_folder.empty()) return;
    std::error_code ec;
    std::filesystem::create_directories(shared_folder / "compiled", ec);
    if (!ec) shared_ = shared_folder / "compiled";
}

std::filesystem::path HandlerCompiler::default_sdk_include() {
    std::error_code ec;
    const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (!ec) {
        const auto installed = exe.parent_path().parent_path() / "include";
        if (std::filesystem::exists(installed / "csp" / "csp.h")) return installed;
    }
    return CSPD_SOURCE_SDK_INCLUDE;
}

std::size_t HandlerCompiler::sweep(const std::filesystem::path& server_folder, std::chrono::seconds age) {
    std::size_t removed = 0;
    std::error_code ec;
    for (std::filesystem::directory_iterator it(server_folder / "compiled", ec), end; !ec && it != end;
         it.increment(ec)) {
        const std::filesystem::path& path = it->path();
        if (path.extension() != ".lock" || younger_than(path, age)) continue;
        // The results of one source go with its lock, and only while nobody holds it.
        const UniqueFd lock(::open(path.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW));
        if (!lock || ::flock(lock.get(), LOCK_EX | LOCK_NB) != 0) continue;
        std::filesystem::path stem = path;
        stem.replace_extension();
        std::error_code ignored;
        for (const char* kind : {".so", ".failed", ".headers"}) {
            std::filesystem::path result = stem;
            result += kind;
            std::filesystem::remove(result, ignored);
        }
        if (std::filesystem::remove(path, ignored)) ++removed;
    }
    return removed;
}

CompileResult HandlerCompiler::compile(const std::string& name, const std::filesystem::path& source,
                                       std::atomic<pid_t>& running, const std::atomic<bool>& cancel) const {
    if (!shared_.empty()) return compile_once(name, source, running, cancel);
    return run_compiler(name, source, {}, running, cancel);
}

CompileResult HandlerCompiler::compile_once(const std::string& name, const std::filesystem::path& source,
                                            std::atomic<pid_t>& running, const std::atomic<bool>& cancel) const {
    std::string text;
    if (!read_file(source, text)) return run_compiler(name, source, {}, running, cancel);  // it says why
    // The key: the bytes, and what else decides the result (compiler, flags' inputs, language).
    const std::string signature = compiler_for(source) + "\n" + sdk_include_.string() + "\n" + source.extension().string();
    char key[24];
    std::snprintf(key, sizeof key, ".%016" PRIx64, fnv1a64(text, fnv1a64(signature)));
    const std::string id = name + key;
    const std::filesystem::path built = shared_ / (id + ".so"), failed = shared_ / (id + ".failed");

    // One worker compiles; the others wait here (a compile thread: blocking is fine), then take its result.
    const UniqueFd lock = take_lock(shared_ / (id + ".lock"), cancel);
    CompileResult result;
    if (cancel) {
        result.diagnostics = "compilation cancelled\n";
        return result;
    }
    const std::filesystem::path output = scratch_dir_ / ("compiled-" + name + "-" + std::to_string(++counter) + ".so");
    const std::filesystem::path headers = shared_ / (id + ".headers");
    std::error_code ec;
    if (std::filesystem::exists(built, ec) && headers_unchanged(headers) && place(built, output)) {
        result.ok = result.shared = true;
        result.output = output;
        return result;
    }
    // A refusal is shared only with the workers compiling at the same moment (its headers are not known).
    if (std::string said; younger_than(failed, kFailureShared) && read_file(failed, said)) {
        result.shared = true;
        result.diagnostics = std::move(said);
        return result;
    }
    // A private copy: the bytes hashed are the bytes compiled, whatever happens to the file meanwhile.
    // #line keeps the user's path in diagnostics and __FILE__; -iquote keeps #include "x.h" beside it.
    const std::filesystem::path copy = scratch_dir_ / ("source-" + std::to_string(++counter) + source.extension().string());
    {
        std::ofstream out(copy, std::ios::binary | std::ios::trunc);
        out << "#line 1 \"" << escaped(source.string()) << "\"\n" << text;
        if (!out.flush()) return run_compiler(name, source, {}, running, cancel);
    }
    const std::filesystem::path depends = scratch_dir_ / ("depends-" + std::to_string(++counter) + ".d");
    result = run_compiler(name, copy, source.parent_path(), running, cancel, depends);
    if (result.ok) {
        // What it included, with their sizes and times: a changed header is a new compile.
        if (record_headers(depends, copy, headers)) publish(result.output, built);
    } else if (result.rejected && !cancel) {
        const std::filesystem::path scratch = shared_ / ("." + id + ".failed." + std::to_string(::getpid()));
        std::ofstream(scratch) << result.diagnostics;
        std::filesystem::rename(scratch, failed, ec);
    }
    std::filesystem::remove(copy, ec);
    std::filesystem::remove(depends, ec);
    return result;
}

CompileResult HandlerCompiler::run_compiler(const std::string& name, const std::filesystem::path& source,
                                            const std::filesystem::path& quote_dir, std::atomic<pid_t>& running,
                                            const std::atomic<bool>& cancel,
                                            const std::filesystem::path& depends) const {
    CompileResult result;
    const std::string stem = "compiled-" + name + "-" + std::to_string(++counter);
    const auto output = scratch_dir_ / (stem + ".so");
    const auto log = scratch_dir_ / (stem + ".log");
    const std::string compiler = compiler_for(source);

    // A module as CMake builds one in Release with debug info, with the flags csp_add_handler
    // gives (cmake/CspHandler.cmake, through handler_flags.hpp): its -z defs makes a misspelt
    // symbol a compile error, with the compiler's words, rather than a refused load.
    std::vector<std::string> args{compiler, "-O2", "-g", "-shared", "-fPIC", "-fdiagnostics-color=never", "-Wall",
                                  "-I" + sdk_include_.string()};
    const auto add = [&args](const auto& flags) { args.insert(args.end(), std::begin(flags), std::end(flags)); };
    add(handler_flags::kAll);
    add(handler_flags::kLink);
    if (!quote_dir.empty()) args.insert(args.end(), {"-iquote", quote_dir.string()});
    if (!depends.empty()) args.insert(args.end(), {"-MMD", "-MF", depends.string()});
    if (source.extension() == ".cpp") {
        args.push_back("-std=c++20");
        add(handler_flags::kCxx);
        if (is_gcc(compiler)) add(handler_flags::kGnuCxx);
    }
    args.insert(args.end(), {"-o", output.string(), source.string()});
    // Below serving: a compile under load takes cores from requests as little as it can.
    args.insert(args.begin(), {"nice", "-n", "10"});
    int error = 0;
    const pid_t pid = spawn_in_own_group(args, log, error);
    if (pid < 0) {
        result.diagnostics = "cannot run " + compiler + ": " + std::system_category().message(error);
        return result;
    }
    running = pid;
    if (cancel) ::kill(-pid, SIGKILL);  // a stop that came while spawning

    int status = 0;
    const bool timed_out = !wait_within(pid, time_limit_, status);
    running = -1;
    ::kill(-pid, SIGKILL);  // anything the driver left behind in its group

    read_file(log, result.diagnostics);
    std::error_code ec;
    std::filesystem::remove(log, ec);
    if (timed_out) {
        result.timed_out = true;
        result.diagnostics += "compilation stopped after " + std::to_string(time_limit_.count()) + " s\n";
    } else if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
        result.ok = true;
        result.output = output;
        return result;
    } else if (result.diagnostics.empty()) {
        result.diagnostics = compiler + " failed\n";
    } else {
        result.rejected = WIFEXITED(status) && WEXITSTATUS(status) == 1;  // it said why, on purpose
    }
    std::filesystem::remove(output, ec);
    return result;
}

}  // namespace cspd
