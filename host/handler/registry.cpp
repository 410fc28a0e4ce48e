#include "handler/registry.hpp"

namespace cspd {

void HandlerRegistry::subscribe(Subscriber subscriber) { subscribers_.push_back(std::move(subscriber)); }

void HandlerRegistry::subscribe_refusals(RefusalSubscriber subscriber) {
    refusal_subscribers_.push_back(std::move(subscriber));
}

void HandlerRegistry::subscribe_vetting(VettingSubscriber subscriber) {
    vetting_subscribers_.push_back(std::move(subscriber));
}

void HandlerRegistry::vetting(const std::string& name, bool started) {
    for (const auto& subscriber : vetting_subscribers_) subscriber(name, started);
}

void HandlerRegistry::refused(const std::string& name, const std::string& reason) {
    for (const auto& subscriber : refusal_subscribers_) subscriber(name, reason);
}

void HandlerRegistry::install(std::shared_ptr<const HandlerVersion> version) {
    const std::string name = version->name();
    live_[name] = version;
    publish(name, version);
}

void HandlerRegistry::remove(const std::string& name) {
    if (live_.erase(name) == 0) return;
    publish(name, nullptr);
}

void HandlerRegistry::clear() {
    for (const auto& name : names()) remove(name);
}

std::shared_ptr<const HandlerVersion> HandlerRegistry::current(const std::string& name) const {
    auto it = live_.find(name);
    return it == live_.end() ? nullptr : it->second;
}

std::vector<std::string> HandlerRegistry::names() const {
    std::vector<std::string> out;
    out.reserve(live_.size());
    for (const auto& [name, version] : live_) out.push_back(name);
    return out;
}

void HandlerRegistry::publish(const std::string& name, const std::shared_ptr<const HandlerVersion>& version) {
    for (const auto& subscriber : subscribers_) subscriber(name, version);
}

}  // namespace cspd
