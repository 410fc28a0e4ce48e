// The host's side of SDK 2.2, the toolkit: form arguments, iteration over arguments and headers,
// cookies, request ids, csp_log and the shared store; and later minors' (compression, limits, the
// data folder). Functions of the csp_host_api table.
#pragma once

#include <csp/csp.h>

#include <string_view>

namespace cspd {

class HandlerRequestView;

struct ToolkitApi {
    /// The first field called `wanted` in urlencoded `text`, decoded into the view's storage if it
    /// needs it; absent if there is none or its value has a bad escape.
    static csp_str find_field(const HandlerRequestView& view, std::string_view text, std::string_view wanted) noexcept;

    static csp_str form_arg(const csp_request* req, const char* name, size_t name_size) noexcept;
    static int arg_at(const csp_request* req, size_t index, csp_str* name, csp_str* value) noexcept;
    static int header_at(const csp_request* req, size_t index, csp_str* name, csp_str* value) noexcept;
    static csp_str cookie(const csp_request* req, const char* name, size_t name_size) noexcept;
    static csp_str request_id(const csp_request* req) noexcept;
    static int log(const csp_request* req, int level, const char* text, size_t size) noexcept;
    static int kv_get(const csp_request* req, const char* key, size_t key_size, void* out, size_t out_size,
                      size_t* value_size) noexcept;
    static int kv_put(const csp_request* req, const char* key, size_t key_size, const void* value,
                      size_t value_size, unsigned ttl_seconds) noexcept;
    static int kv_delete(const csp_request* req, const char* key, size_t key_size) noexcept;
    static int kv_add(const csp_request* req, const char* key, size_t key_size, int64_t delta,
                      int64_t* result) noexcept;
    static int reply_cache(csp_reply* reply, unsigned seconds) noexcept;
    static csp_str config(const csp_init_context* ctx, const char* key, size_t key_size) noexcept;
    static int config_at(const csp_init_context* ctx, size_t index, csp_str* key, csp_str* value) noexcept;
    static int init_log(const csp_init_context* ctx, int level, const char* text, size_t size) noexcept;
    static int reply_cache_vary(csp_reply* reply, const char* header, size_t size) noexcept;
    static int reply_compress(csp_reply* reply, int mode) noexcept;
    static unsigned limit(const csp_request* req, const char* key, size_t key_size, double rate_per_s,
                          unsigned burst) noexcept;
    static csp_str data_dir(const csp_request* req, const csp_init_context* ctx) noexcept;
};

}  // namespace cspd
