// A handler's configuration (SDK csp_config): NAME.conf or NAME.json beside NAME.so, read when a
// version loads and handed to its init. A change to the file loads the handler again.
//  - NAME.conf: "key = value" lines; blank lines and lines starting with # or ; are skipped;
//    spaces around keys and values are trimmed; a value in double quotes keeps its spaces.
//  - NAME.json: one object. Nested objects give dotted keys ("db.host"); strings are themselves;
//    numbers, true and false their JSON text; null an empty value; arrays their JSON text.
// Keys are 1 to 128 characters of A-Z a-z 0-9 _ . -; a key given twice, or both files at once,
// is an error: the version is refused with the reason, and an older one serves on.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace cspd {

struct HandlerConfigRead;

class HandlerConfig {
public:
    using Read = HandlerConfigRead;
    /// What is there for `name` in `folder`: nothing (no file), a configuration, or an error.
    static Read read(const std::filesystem::path& folder, const std::string& name);

    /// Parses the text of a .conf or a .json file; `error` set (and an empty config) if it is not valid.
    static HandlerConfig parse_conf(std::string_view text, std::string& error);
    static HandlerConfig parse_json(std::string_view text, std::string& error);

    /// The value of `key`, or null.
    const std::string* find(std::string_view key) const;
    const std::vector<std::pair<std::string, std::string>>& entries() const { return entries_; }
    /// The file it came from ("NAME.conf"), and its bytes (folded into the version's hash).
    const std::string& file_name() const { return file_name_; }
    const std::string& text() const { return text_; }

private:
    bool add(std::string key, std::string value, std::string& error);

    std::vector<std::pair<std::string, std::string>> entries_;  // in the file's order
    std::string file_name_, text_;
};

struct HandlerConfigRead {
    std::optional<HandlerConfig> config;
    std::string error;  ///< why the file cannot be used; empty when it can (or there is none)
};

}  // namespace cspd
