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

void HandlerRegistry::subscribe_fallbacks(FallbackSubscriber subscriber) {
    fallback_subscribers_.push_back(std::move(subscriber));
}

void HandlerRegistry::install(std::shared_ptr<const HandlerVersion> version,
                              std::shared_ptr<const HandlerVersion> fallback) {
    const std::string name = version->name();
    Live& live = live_[name];
    const bool new_fallback = live.fallback != fallback;
    live = {version, fallback};
    publish(name, version);
    if (new_fallback)
        for (const auto& subscriber : fallback_subscribers_) subscriber(name, fallback);
}

void HandlerRegistry::set_fallback(const std::string& name, std::shared_ptr<const HandlerVersion> fallback) {
    const auto it = live_.find(name);
    if (it == live_.end() || it->second.fallback == fallback) return;
    it->second.fallback = fallback;
    for (const auto& subscriber : fallback_subscribers_) subscriber(name, fallback);
}

void HandlerRegistry::remove(const std::string& name) {
    const auto it = live_.find(name);
    if (it == live_.end()) return;
    live_.erase(it);
    publish(name, nullptr);  // the table forgets the fallback with the entry
}

void HandlerRegistry::clear() {
    for (const auto& name : names()) remove(name);
}

std::shared_ptr<const HandlerVersion> HandlerRegistry::current(const std::string& name) const {
    auto it = live_.find(name);
    return it == live_.end() ? nullptr : it->second.version;
}

std::shared_ptr<const HandlerVersion> HandlerRegistry::fallback(const std::string& name) const {
    auto it = live_.find(name);
    return it == live_.end() ? nullptr : it->second.fallback;
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
