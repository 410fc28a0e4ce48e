// The authoritative name -> live version map, owned by the control thread.
// Every change is published to subscribers (one per event loop), which keep
// their own HandlerTable copy: the request path never takes a lock.
#pragma once

#include "handler_version.hpp"

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace cspd {

class HandlerRegistry {
public:
    /// Receives (name, version); a null version means the handler is gone.
    using Subscriber = std::function<void(const std::string&, std::shared_ptr<const HandlerVersion>)>;

    /// Setup only, before the first change.
    void subscribe(Subscriber subscriber);

    /// Makes `version` the live one for its name and tells every subscriber.
    void install(std::shared_ptr<const HandlerVersion> version);
    /// Removes `name` (no-op if absent) and tells every subscriber.
    void remove(const std::string& name);
    /// Removes everything, at shutdown.
    void clear();

    std::shared_ptr<const HandlerVersion> current(const std::string& name) const;
    std::vector<std::string> names() const;

private:
    void publish(const std::string& name, const std::shared_ptr<const HandlerVersion>& version);

    std::map<std::string, std::shared_ptr<const HandlerVersion>> live_;
    std::vector<Subscriber> subscribers_;
};

} // namespace cspd
