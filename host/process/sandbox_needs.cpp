#include "process/sandbox_needs.hpp"

#include "handler/handler_config.hpp"
#include "handler/handler_name.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <system_error>

namespace cspd {
namespace {

namespace fs = std::filesystem;

bool beneath_any(const fs::path& path, const std::vector<fs::path>& folders) {
    return std::any_of(folders.begin(), folders.end(), [&](const fs::path& f) { return is_beneath(path, f); });
}

std::string trimmed(std::string_view text) {
    const auto first = text.find_first_not_of(" \t");
    if (first == std::string_view::npos) return {};
    return std::string(text.substr(first, text.find_last_not_of(" \t") - first + 1));
}

/// "/a, /b" or a JSON array's text (NAME.json gives arrays so): the paths, or an error.
bool paths_of(const std::string& key, const std::string& value, std::vector<fs::path>& out, std::string& error) {
    std::vector<std::string> words;
    if (!value.empty() && value.front() == '[') {
        const nlohmann::json list = nlohmann::json::parse(value, nullptr, false);
        if (!list.is_array()) return error = key + " is not a list of paths", false;
        for (const auto& item : list) {
            if (!item.is_string()) return error = key + " is not a list of paths", false;
            words.push_back(item.get<std::string>());
        }
    } else {
        for (std::size_t at = 0; at <= value.size();) {
            const std::size_t comma = std::min(value.find(',', at), value.size());
            if (std::string word = trimmed(std::string_view(value).substr(at, comma - at)); !word.empty())
                words.push_back(std::move(word));
            at = comma + 1;
        }
    }
    for (const std::string& word : words) {
        const fs::path path(word);
        if (!path.is_absolute()) return error = key + ": " + word + " is not an absolute path", false;
        out.push_back(path.lexically_normal());
    }
    return true;
}

bool flag_of(const std::string& key, const std::string& value, bool& out, std::string& error) {
    if (value == "true" || value == "yes" || value == "1") return out = true, true;
    if (value == "false" || value == "no" || value == "0") return out = false, true;
    error = key + " is " + value + ", not true or false";
    return false;
}

/// NAME.so's folder when it is a link that leads out of `folder` (a file built elsewhere).
void add_link_target(const fs::path& folder, const fs::path& file, SandboxNeeds& needs) {
    std::error_code ec;
    if (!fs::is_symlink(file, ec)) return;
    const fs::path target = fs::canonical(file, ec);
    if (ec) return;
    const fs::path inside = fs::canonical(folder, ec);
    if (ec || is_beneath(target, inside)) return;
    needs.read.push_back(target.parent_path());  // the folder: a rebuild replaces the file itself (checked below)
}

}  // namespace

void SandboxNeeds::add(const SandboxNeeds& other) {
    read.insert(read.end(), other.read.begin(), other.read.end());
    write.insert(write.end(), other.write.begin(), other.write.end());
    exec = exec || other.exec;
    network = network || other.network;
}

std::string SandboxNeeds::describe() const {
    std::string out;
    const auto put = [&](const std::string& part) { out += (out.empty() ? "" : ", ") + part; };
    for (const auto& p : read) put("read " + p.string());
    for (const auto& p : write) put("write " + p.string());
    if (exec) put("exec");
    if (!network) put("no network");
    return out;
}

namespace {

/// Reads NAME.conf's sandbox.* keys into `needs`; false, with `needs.error`, at the first that cannot be taken.
bool read_declarations(const fs::path& folder, const std::string& name, SandboxNeeds& needs) {
    const HandlerConfig::Read config = HandlerConfig::read(folder, name);
    if (!config.config) return true;  // a file in error is refused as it loads, with its reason
    for (const auto& [key, value] : config.config->entries()) {
        if (!key.starts_with("sandbox.")) continue;
        bool ok = true;
        if (key == "sandbox.read")
            ok = paths_of(key, value, needs.read, needs.error);
        else if (key == "sandbox.write")
            ok = paths_of(key, value, needs.write, needs.error);
        else if (key == "sandbox.exec")
            ok = flag_of(key, value, needs.exec, needs.error);
        else if (key == "sandbox.network")
            ok = flag_of(key, value, needs.network, needs.error);
        else
            ok = (needs.error = key + " is not a sandbox declaration (sandbox.read, .write, .exec, .network)", false);
        if (!ok) return false;
    }
    return true;
}

}  // namespace

SandboxNeeds needs_of(const fs::path& folder, const std::string& name, const fs::path& file,
                      const std::vector<fs::path>& never) {
    SandboxNeeds needs;
    add_link_target(folder, file, needs);
    if (!read_declarations(folder, name, needs)) return needs;
    // Nothing that holds the keys or lies beneath them, however it is spelt (links, a trailing /).
    for (const auto& list : {&needs.read, &needs.write})
        for (const auto& path : *list)
            for (const auto& secret : never) {
                const fs::path resolved = normal_path(path);
                if (is_beneath(resolved, secret) || is_beneath(secret, resolved)) {
                    needs.error = "it asks for " + path.string() + ", which holds or lies beneath --certs: no handler "
                                  "may read the keys";
                    return needs;
                }
            }
    return needs;
}

SandboxNeeds needs_of_folder(const fs::path& folder, bool sources, const std::vector<fs::path>& never) {
    SandboxNeeds all;
    std::error_code ec;
    for (fs::directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec)) {
        const fs::path file = it->path();
        const std::string extension = file.extension().string();
        if (!(extension == ".so" || (sources && (extension == ".c" || extension == ".cpp")))) continue;
        const std::string name = file.stem().string();
        if (!is_valid_handler_name(name)) continue;
        const SandboxNeeds needs = needs_of(folder, name, file, never);
        if (needs.error.empty()) all.add(needs);
    }
    return all;
}

void grant(FileRules& rules, const SandboxNeeds& needs) {
    rules.read.insert(rules.read.end(), needs.read.begin(), needs.read.end());
    rules.write.insert(rules.write.end(), needs.write.begin(), needs.write.end());
}

std::string beyond(const SandboxNeeds& needs, const FileRules& rules, bool exec, bool network) {
    std::vector<fs::path> readable = rules.read;
    readable.insert(readable.end(), rules.run.begin(), rules.run.end());
    readable.insert(readable.end(), rules.write.begin(), rules.write.end());
    SandboxNeeds missing;
    for (const auto& path : needs.read)
        if (!beneath_any(path, readable)) missing.read.push_back(path);
    for (const auto& path : needs.write)
        if (!beneath_any(path, rules.write)) missing.write.push_back(path);
    missing.exec = needs.exec && !exec;
    std::string out = missing.describe();
    if (needs.network && !network) out += std::string(out.empty() ? "" : ", ") + "network";
    return out;
}

}  // namespace cspd
