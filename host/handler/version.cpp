#include "handler/version.hpp"

#include <spdlog/spdlog.h>

#include <cinttypes>
#include <cstdio>

namespace cspd {

HandlerVersion::HandlerVersion(std::string name, std::uint64_t sequence, HandlerFileIdentity file,
                               std::shared_ptr<void> library, HandlerEntry entry, void* state)
    : name_(std::move(name)), sequence_(sequence), file_(file), library_(std::move(library)), entry_(entry),
      state_(state), label_{name_.c_str(), sequence_, file_.size, file_.content_hash} {}

HandlerVersion::~HandlerVersion() {
    if (entry_.cleanup) {
        RunningHandler marker(label_, HandlerPhase::cleanup);
        try {
            entry_.cleanup(state_);
        } catch (...) {
            spdlog::error("handler {}: cleanup threw an exception; unloading anyway", describe());
        }
    }
    {
        RunningHandler marker(label_, HandlerPhase::unload);  // static destructors run in dlclose
        library_.reset();
    }
    spdlog::info("handler {}: unloaded", describe());
}

std::string HandlerVersion::describe() const {
    char text[128];
    std::snprintf(text, sizeof text, "%s.so#%" PRIu64 " (%" PRIu64 " bytes, fnv %016" PRIx64 ")", name_.c_str(),
                  sequence_, file_.size, file_.content_hash);
    return text;
}

}  // namespace cspd
