// One event loop's view of the live handlers. Touched only by its own loop
// thread, so lookups take no lock and no atomic.
#pragma once

#include "handler_version.hpp"

#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>

namespace cspd {

class HandlerTable {
public:
    /// The live version for `name`, or null. Valid until this loop next runs a posted update.
    const HandlerVersion* find(std::string_view name) const {
        auto it = table_.find(name);
        return it == table_.end() ? nullptr : it->second.get();
    }

    /// Null `version` removes. Dropping the old reference may unload the old library.
    void set(const std::string& name, std::shared_ptr<const HandlerVersion> version);

    std::size_t size() const { return table_.size(); }

private:
    struct Hash {
        using is_transparent = void;
        std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
    };
    std::unordered_map<std::string, std::shared_ptr<const HandlerVersion>, Hash, std::equal_to<>> table_;
};

} // namespace cspd
