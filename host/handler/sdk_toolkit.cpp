#include "handler/sdk_toolkit.hpp"

#include "common/clocks.hpp"
#include "common/one_line.hpp"
#include "handler/data_folders.hpp"
#include "handler/host_services.hpp"
#include "handler/init_context.hpp"
#include "handler/sdk_bridge.hpp"
#include "http/cookie_header.hpp"
#include "http/form_fields.hpp"
#include "http/uri.hpp"

#include <spdlog/spdlog.h>

#include <cstdio>
#include <new>

namespace cspd {
namespace {

HandlerRequestView& view_of(const csp_request* req) { return HandlerRequestView::of(req); }
/// A present value: never a null .data (null means absent in the SDK).
csp_str present_csp(std::string_view s) { return {s.data() ? s.data() : "", s.size()}; }
constexpr csp_str kAbsent{nullptr, 0};
constexpr unsigned kMaxCacheSeconds = 365 * 24 * 3600;
/// CSP_LOG_DEBUG .. CSP_LOG_ERROR as spdlog's levels.
constexpr spdlog::level::level_enum kLevels[] = {spdlog::level::debug, spdlog::level::info, spdlog::level::warn,
                                                 spdlog::level::err};

/// `text` decoded into `store` if it holds escapes; false for a bad escape.
bool decode(std::deque<std::string>& store, std::string_view text, csp_str& out) {
    if (text.find_first_of("%+") == std::string_view::npos) {
        out = present_csp(text);
        return true;
    }
    std::string& decoded = store.emplace_back();
    if (!percent_decode(text, decoded, true)) return false;
    out = present_csp(decoded);
    return true;
}

/// The body as form fields: not for GET and HEAD, whose bodies have no meaning (RFC 9110 §9.3.1),
/// so a GET with a body cannot pass a handler arguments its next GET without one would not see.
std::string_view form_body(const HttpRequest& request) {
    if (request.head || request.method == "GET") return {};
    return is_form_urlencoded(request.header("content-type")) ? request.body : std::string_view{};
}

}  // namespace

std::string_view HandlerRequestView::request_id() {
    const csp_str id = ToolkitApi::request_id(&view_);
    return {id.data, id.size};
}

HostServices& host_services() {
    static HostServices services;
    return services;
}

csp_str ToolkitApi::find_field(const HandlerRequestView& view, std::string_view text, std::string_view wanted) noexcept {
    csp_str found = kAbsent;
    try {
        std::string decoded_name;
        for_each_form_field(text, [&](std::string_view name, std::string_view value) {
            // Names are compared decoded, as csp_arg_at gives them ("user%5Bname%5D" is "user[name]").
            if (name.find_first_of("%+") != std::string_view::npos) {
                decoded_name.clear();
                if (!percent_decode(name, decoded_name, true)) return true;
                name = decoded_name;
            }
            if (name != wanted) return true;
            auto& store = const_cast<HandlerRequestView&>(view).decoded_args_;
            if (!decode(store, value, found)) found = kAbsent;
            return false;
        });
    } catch (const std::bad_alloc&) {
        return kAbsent;
    }
    return found;
}

csp_str ToolkitApi::form_arg(const csp_request* req, const char* name, size_t name_size) noexcept {
    HandlerRequestView& view = view_of(req);
    const std::string_view wanted(name, name_size);
    const csp_str in_query = find_field(view, {req->query.data, req->query.size}, wanted);
    if (in_query.data) return in_query;
    return find_field(view, form_body(*view.request_), wanted);
}

int ToolkitApi::arg_at(const csp_request* req, size_t index, csp_str* name, csp_str* value) noexcept {
    HandlerRequestView& view = view_of(req);
    if (!name || !value) return -1;
    if (!view.args_listed_) {
        try {
            const auto list = [&](std::string_view text) {
                for_each_form_field(text, [&](std::string_view n, std::string_view v) {
                    csp_str decoded_name, decoded_value;
                    if (decode(view.decoded_args_, n, decoded_name) && decode(view.decoded_args_, v, decoded_value))
                        view.args_.emplace_back(decoded_name, decoded_value);
                    return true;
                });
            };
            list({req->query.data, req->query.size});
            list(form_body(*view.request_));
        } catch (const std::bad_alloc&) {
            view.args_.clear();
            return -1;
        }
        view.args_listed_ = true;
    }
    if (index >= view.args_.size()) return -1;
    *name = view.args_[index].first;
    *value = view.args_[index].second;
    return 0;
}

int ToolkitApi::header_at(const csp_request* req, size_t index, csp_str* name, csp_str* value) noexcept {
    const HandlerRequestView& view = view_of(req);
    if (!name || !value || index >= view.request_->headers.size()) return -1;
    *name = present_csp(view.request_->headers[index].name);
    *value = present_csp(view.request_->headers[index].value);
    return 0;
}

csp_str ToolkitApi::cookie(const csp_request* req, const char* name, size_t name_size) noexcept {
    const HandlerRequestView& view = view_of(req);
    const std::string_view wanted(name, name_size);
    csp_str found = kAbsent;
    for (const HttpHeader& header : view.request_->headers) {
        if (!iequals(header.name, "cookie")) continue;
        for_each_cookie(header.value, [&](std::string_view n, std::string_view v) {
            if (n != wanted) return true;
            found = present_csp(v);
            return false;
        });
        if (found.data) break;
    }
    return found;
}

csp_str ToolkitApi::request_id(const csp_request* req) noexcept {
    HandlerRequestView& view = view_of(req);
    std::uint8_t state = view.id_state_.load(std::memory_order_acquire);
    if (state == 2) return view.id_text_;
    if (state == 0 && view.id_state_.compare_exchange_strong(state, 1, std::memory_order_acquire)) {
        const std::string_view sent = view.request_->header("x-request-id");
        view.id_text_ = present_csp(is_sane_request_id(sent) ? sent : view.id_.format(view.id_buffer_));
        view.id_state_.store(2, std::memory_order_release);
        return view.id_text_;
    }
    while (view.id_state_.load(std::memory_order_acquire) != 2) {
    }  // another thread formats it now: a few nanoseconds
    return view.id_text_;
}

int ToolkitApi::log(const csp_request* req, int level, const char* text, size_t size) noexcept {
    if (level < CSP_LOG_DEBUG || level > CSP_LOG_ERROR || (!text && size)) return -1;
    const HandlerVersion* version = view_of(req).version();
    if (!version) return -1;
    if (!spdlog::should_log(kLevels[level])) return 0;
    std::uint64_t dropped = 0;
    if (!version->log_budget().admit(host_services().log_rate, coarse_monotonic_now_ns(), dropped)) return 1;
    try {
        const csp_str id = request_id(req);
        std::string safe;
        const std::string_view line = one_line({text ? text : "", std::min<size_t>(size, 2000)}, safe);
        if (dropped)
            spdlog::warn("handler {}: {} log lines dropped (over --handler-log-rate {}/s)", version->describe(),
                         dropped, host_services().log_rate);
        spdlog::log(kLevels[level], "handler {} [{}]: {}", version->describe(), std::string_view(id.data, id.size),
                    line);
    } catch (...) {
        return 1;  // a log that cannot be written is not the handler's failure
    }
    return 0;
}

csp_str ToolkitApi::data_dir(const csp_request* req, const csp_init_context* ctx) noexcept {
    try {
        std::string_view name;
        if (ctx)
            name = {ctx->name.data, ctx->name.size};
        else if (const HandlerVersion* version = req ? view_of(req).version() : nullptr)
            name = version->name();
        const std::string* folder = handler_data_folder(name);
        return folder ? csp_str{folder->c_str(), folder->size()} : csp_str{nullptr, 0};
    } catch (...) {
        return {nullptr, 0};
    }
}

int ToolkitApi::reply_cache(csp_reply* r, unsigned seconds) noexcept {
    if (!r || seconds > kMaxCacheSeconds) return -1;
    static_cast<HandlerReply*>(r->host)->cache_seconds_ = seconds;
    return 0;
}

int ToolkitApi::reply_cache_vary(csp_reply* r, const char* header, size_t size) noexcept {
    const std::string_view name(header ? header : "", header ? size : 0);
    if (!r || !is_token(name)) return -1;
    HandlerReply& reply = *static_cast<HandlerReply*>(r->host);
    if (reply.cache_vary_.size() >= 8) return -1;
    try {
        reply.cache_vary_.emplace_back(name);
    } catch (const std::bad_alloc&) {
        return -1;
    }
    return 0;
}

int ToolkitApi::reply_compress(csp_reply* r, int mode) noexcept {
    if (!r || (mode != CSP_COMPRESS_AUTO && mode != CSP_COMPRESS_OFF)) return -1;
    static_cast<HandlerReply*>(r->host)->compress_ = mode == CSP_COMPRESS_AUTO;
    return 0;
}

InitContext::InitContext(const std::string& name, const HandlerLabel& label, const HandlerConfig& config,
                         unsigned worker_index, unsigned worker_count)
    : config_(config) {
    char text[160];
    std::snprintf(text, sizeof text, "%s.so#%llu (%llu bytes, fnv %016llx)", label.name,
                  static_cast<unsigned long long>(label.sequence), static_cast<unsigned long long>(label.size),
                  static_cast<unsigned long long>(label.content_hash));
    describe_ = text;
    raw_.size = sizeof raw_;
    raw_.api = &host_api();
    raw_.name = {name.data(), name.size()};
    raw_.worker_index = worker_index;
    raw_.worker_count = worker_count;
    raw_.host = this;
}

csp_str ToolkitApi::config(const csp_init_context* ctx, const char* key, size_t key_size) noexcept {
    if (!ctx || !key) return kAbsent;
    const std::string* value = InitContext::of(ctx).config().find({key, key_size});
    return value ? present_csp(*value) : kAbsent;
}

int ToolkitApi::config_at(const csp_init_context* ctx, size_t index, csp_str* key, csp_str* value) noexcept {
    if (!ctx || !key || !value) return -1;
    const auto& entries = InitContext::of(ctx).config().entries();
    if (index >= entries.size()) return -1;
    *key = present_csp(entries[index].first);
    *value = present_csp(entries[index].second);
    return 0;
}

int ToolkitApi::init_log(const csp_init_context* ctx, int level, const char* text, size_t size) noexcept {
    if (!ctx || level < CSP_LOG_DEBUG || level > CSP_LOG_ERROR || (!text && size)) return -1;
    InitContext& context = InitContext::of(ctx);
    if (context.log_lines_left() == 0) return 1;
    --context.log_lines_left();
    try {
        std::string safe;
        spdlog::log(kLevels[level], "handler {} [init]: {}", context.describe(),
                    one_line({text ? text : "", std::min<size_t>(size, 2000)}, safe));
    } catch (...) {
        return 1;
    }
    return 0;
}

}  // namespace cspd
