// What a handler's init is told (SDK csp_init_context, 2.2): its name, its worker, and its
// configuration. Lives on the loader's stack for the length of one init call.
#pragma once

#include "common/crash_context.hpp"
#include "handler/handler_config.hpp"

#include <csp/csp.h>

#include <string>

namespace cspd {

class InitContext {
public:
    InitContext(const std::string& name, const HandlerLabel& label, const HandlerConfig& config,
                unsigned worker_index, unsigned worker_count);
    InitContext(const InitContext&) = delete;
    InitContext& operator=(const InitContext&) = delete;

    const csp_init_context* raw() const { return &raw_; }
    static InitContext& of(const csp_init_context* ctx) {
        return *static_cast<InitContext*>(const_cast<void*>(ctx->host));
    }

    const HandlerConfig& config() const { return config_; }
    /// "NAME.so#SEQ (SIZE bytes, fnv HASH)", as the handler's other log lines say it.
    const std::string& describe() const { return describe_; }
    /// csp_init_log lines left to this init (a looping init cannot flood the log).
    unsigned& log_lines_left() { return log_lines_left_; }

private:
    const HandlerConfig& config_;
    std::string describe_;
    unsigned log_lines_left_ = 100;
    csp_init_context raw_{};
};

}  // namespace cspd
