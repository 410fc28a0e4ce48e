// ABI 1, frozen: the layouts of the structs handlers built against the first SDK header
// read (tests/abi1/csp/csp.h is that header). The host fills these for such handlers, so
// that they keep loading and working unchanged. Never edit.
#pragma once

#include <csp/csp.h>

#include <cstddef>

namespace cspd::abi1 {

inline constexpr unsigned kVersion = 1;

struct request;

struct host_api {
    int (*reply_reserve)(csp_reply* reply, std::size_t capacity);
    int (*reply_set_content_type)(csp_reply* reply, const char* type, std::size_t size);
    int (*reply_add_header)(csp_reply* reply, const char* name, std::size_t name_size, const char* value,
                            std::size_t value_size);
    csp_str (*request_query_arg)(const request* req, const char* name, std::size_t name_size);
    csp_str (*request_header)(const request* req, const char* name, std::size_t name_size);
};

struct request {
    const host_api* api;
    csp_str method, path, query, body, client_addr;
    unsigned short client_port;
    unsigned char http_major, http_minor;
    void* state;
    const void* host;
};

struct handler_descriptor {
    unsigned abi_version;
    unsigned descriptor_size;
    int (*handle)(const request* req, csp_reply* reply);
    int (*init)(void** state);
    void (*cleanup)(void* state);
};

// csp_reply kept its layout: data, size, capacity, api, host (api then points at a host_api).
static_assert(sizeof(request) == 8 + 5 * sizeof(csp_str) + 8 + 8 + 8, "ABI 1 request layout");
static_assert(sizeof(handler_descriptor) == 32, "ABI 1 descriptor layout");

} // namespace cspd::abi1
