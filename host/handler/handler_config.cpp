#include "handler/handler_config.hpp"

#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>

namespace cspd {
namespace {

constexpr std::size_t kMaxConfigFile = 1 << 20;

bool valid_key(std::string_view key) {
    if (key.empty() || key.size() > 128) return false;
    for (char c : key)
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
              c == '-'))
            return false;
    return true;
}

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
    return s;
}

void flatten(const nlohmann::json& value, const std::string& prefix,
             std::vector<std::pair<std::string, std::string>>& out) {
    if (value.is_object()) {
        for (const auto& [key, item] : value.items()) flatten(item, prefix.empty() ? key : prefix + "." + key, out);
        return;
    }
    if (value.is_string()) out.emplace_back(prefix, value.get<std::string>());
    else if (value.is_null()) out.emplace_back(prefix, "");
    else out.emplace_back(prefix, value.dump());
}

}  // namespace

bool HandlerConfig::add(std::string key, std::string value, std::string& error) {
    if (!valid_key(key)) {
        error = "key \"" + key.substr(0, 64) + "\" is not 1 to 128 characters of A-Z a-z 0-9 _ . -";
        return false;
    }
    if (find(key)) {
        error = "key \"" + key + "\" is given twice";
        return false;
    }
    entries_.emplace_back(std::move(key), std::move(value));
    return true;
}

HandlerConfig HandlerConfig::parse_conf(std::string_view text, std::string& error) {
    HandlerConfig config;
    unsigned number = 0;
    while (!text.empty()) {
        const std::size_t end = text.find('\n');
        const std::string_view line = trim(text.substr(0, end));
        text = end == std::string_view::npos ? std::string_view{} : text.substr(end + 1);
        ++number;
        if (line.empty() || line.front() == '#' || line.front() == ';') continue;
        const std::size_t eq = line.find('=');
        if (eq == std::string_view::npos) {
            error = "line " + std::to_string(number) + " is not \"key = value\"";
            return {};
        }
        std::string_view value = trim(line.substr(eq + 1));
        if (value.size() >= 2 && value.front() == '"' && value.back() == '"') value = value.substr(1, value.size() - 2);
        if (!config.add(std::string(trim(line.substr(0, eq))), std::string(value), error)) {
            error = "line " + std::to_string(number) + ": " + error;
            return {};
        }
    }
    return config;
}

HandlerConfig HandlerConfig::parse_json(std::string_view text, std::string& error) {
    const nlohmann::json doc = nlohmann::json::parse(text, nullptr, false);
    if (doc.is_discarded() || !doc.is_object()) {
        error = doc.is_discarded() ? "not valid JSON" : "not a JSON object";
        return {};
    }
    std::vector<std::pair<std::string, std::string>> flat;
    flatten(doc, "", flat);
    HandlerConfig config;
    for (auto& [key, value] : flat)
        if (!config.add(std::move(key), std::move(value), error)) return {};
    return config;
}

HandlerConfig::Read HandlerConfig::read(const std::filesystem::path& folder, const std::string& name) {
    Read result;
    const std::filesystem::path conf = folder / (name + ".conf"), json = folder / (name + ".json");
    std::error_code ec;
    const bool has_conf = std::filesystem::is_regular_file(conf, ec), has_json = std::filesystem::is_regular_file(json, ec);
    if (!has_conf && !has_json) return result;
    if (has_conf && has_json) {
        result.error = "both " + name + ".conf and " + name + ".json are there: keep one";
        return result;
    }
    const std::filesystem::path& path = has_conf ? conf : json;
    std::ifstream in(path, std::ios::binary);
    std::ostringstream bytes;
    bytes << in.rdbuf();
    if (!in && !in.eof()) {
        result.error = "cannot read " + path.filename().string();
        return result;
    }
    std::string text = std::move(bytes).str();
    if (text.size() > kMaxConfigFile) {
        result.error = path.filename().string() + " is over 1 MiB";
        return result;
    }
    std::string error;
    HandlerConfig config = has_conf ? parse_conf(text, error) : parse_json(text, error);
    if (!error.empty()) {
        result.error = path.filename().string() + ": " + error;
        return result;
    }
    config.file_name_ = path.filename().string();
    config.text_ = std::move(text);
    result.config = std::move(config);
    return result;
}

const std::string* HandlerConfig::find(std::string_view key) const {
    for (const auto& [k, v] : entries_)
        if (k == key) return &v;
    return nullptr;
}

}  // namespace cspd
