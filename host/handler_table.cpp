#include "handler_table.hpp"

namespace cspd {

void HandlerTable::set(const std::string& name, std::shared_ptr<const HandlerVersion> version) {
    if (!version) {
        table_.erase(name);
        return;
    }
    table_[name] = std::move(version);
}

} // namespace cspd
