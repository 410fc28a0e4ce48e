// The authoritative name -> live version map, owned by the control thread.
// Every change is published to subscribers (one per event loop), which keep
// their own HandlerTable copy: the request path never takes a lock.
#pragma once

#include "handler/version.hpp"

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

    /// Receives (name, reason) when a file for `name` is refused; the live version stays. An empty
    /// reason: the refused file went.
    using RefusalSubscriber = std::function<void(const std::string&, const std::string&)>;

    /// Receives (name, version): what serves `name` while its live version is quarantined (null: nothing).
    using FallbackSubscriber = std::function<void(const std::string&, std::shared_ptr<const HandlerVersion>)>;

    /// Receives (name, true) when a new version of `name` starts being vetted, (name, false) when
    /// that ends without an install or a refusal (its file went).
    using VettingSubscriber = std::function<void(const std::string&, bool)>;

    /// Setup only, before the first change.
    void subscribe(Subscriber subscriber);
    void subscribe_refusals(RefusalSubscriber subscriber);
    void subscribe_vetting(VettingSubscriber subscriber);
    void subscribe_fallbacks(FallbackSubscriber subscriber);

    /// Makes `version` the live one for its name and tells every subscriber; `fallback` (perhaps
    /// null) serves instead while `version` is quarantined (a rollback).
    void install(std::shared_ptr<const HandlerVersion> version, std::shared_ptr<const HandlerVersion> fallback = nullptr);
    /// Changes only what serves `name` while its live version is quarantined (no-op if absent).
    void set_fallback(const std::string& name, std::shared_ptr<const HandlerVersion> fallback);
    /// Removes `name` (no-op if absent) and tells every subscriber.
    void remove(const std::string& name);
    /// Tells refusal subscribers that a file for `name` was refused, and why (empty: the refused
    /// file went, and the refusal with it).
    void refused(const std::string& name, const std::string& reason);
    /// Tells vetting subscribers that a version of `name` is being vetted (or no longer is).
    void vetting(const std::string& name, bool started);
    /// Removes everything, at shutdown.
    void clear();

    std::shared_ptr<const HandlerVersion> current(const std::string& name) const;
    std::shared_ptr<const HandlerVersion> fallback(const std::string& name) const;
    std::vector<std::string> names() const;

private:
    void publish(const std::string& name, const std::shared_ptr<const HandlerVersion>& version);

    struct Live {
        std::shared_ptr<const HandlerVersion> version, fallback;
    };
    std::map<std::string, Live> live_;
    std::vector<Subscriber> subscribers_;
    std::vector<RefusalSubscriber> refusal_subscribers_;
    std::vector<VettingSubscriber> vetting_subscribers_;
    std::vector<FallbackSubscriber> fallback_subscribers_;
};

}  // namespace cspd
