// POST /csp/order with a JSON body -> the order's total, as JSON:
//   {"items": [{"sku": "tea", "qty": 2, "price": 3.5}, {"sku": "cake", "qty": 1, "price": 4}]}
//   -> {"items": 2, "quantity": 3, "total": 11.0}
// The SDK writes JSON (csp_reply_json_string) but does not read it: a well-kept library does.
// This one uses nlohmann/json (Debian: nlohmann-json3-dev; header-only, so the one-line build
// needs nothing more); in C, cJSON (libcjson-dev) or json-c (libjson-c-dev) serve the same way.
// Bad input gets a clear answer: 415 for another content type, 400 for JSON that does not parse
// (with where), 422 for JSON of the wrong shape (with what).
#include <csp/csp.hpp>

#include <nlohmann/json.hpp>

#include <string>

namespace {

using json = nlohmann::json;

int answer(csp::reply& reply, int status, const json& body) {
    reply.content_type("application/json");
    // A parse error quotes the client's bytes, which need not be UTF-8: replaced, never thrown on.
    reply << body.dump(-1, ' ', false, json::error_handler_t::replace) << "\n";
    return status;
}

int problem(csp::reply& reply, int status, const std::string& what) { return answer(reply, status, {{"error", what}}); }

int order(const csp::request& request, csp::reply& reply) {
    if (request.method() != "POST") {
        reply.header("Allow", "POST");
        return problem(reply, 405, "POST a JSON order here");
    }
    const std::string_view type = request.header("Content-Type").value_or("");
    if (type.substr(0, 16) != "application/json") return problem(reply, 415, "send application/json");

    // The parse error says where the input went wrong: the client is told (caught here, so no
    // exception leaves the handler).
    const std::string_view body = request.body();
    json doc;
    try {
        doc = json::parse(body.begin(), body.end());
    } catch (const json::parse_error& e) {
        return problem(reply, 400, std::string("not JSON: ") + e.what());
    }
    if (!doc.is_object() || !doc.contains("items") || !doc["items"].is_array())
        return problem(reply, 422, "expected an object with an \"items\" array");

    long long quantity = 0;
    double total = 0;
    std::size_t index = 0;
    for (const json& item : doc["items"]) {
        const std::string at = "items[" + std::to_string(index++) + "]";
        if (!item.is_object()) return problem(reply, 422, at + " is not an object");
        const auto sku = item.find("sku");
        const auto qty = item.find("qty");
        const auto price = item.find("price");
        if (sku == item.end() || !sku->is_string() || sku->get_ref<const std::string&>().empty())
            return problem(reply, 422, at + ".sku must be a non-empty string");
        if (qty == item.end() || !qty->is_number_integer() || qty->get<long long>() < 1 || qty->get<long long>() > 1000)
            return problem(reply, 422, at + ".qty must be an integer from 1 to 1000");
        if (price == item.end() || !price->is_number() || price->get<double>() < 0)
            return problem(reply, 422, at + ".price must be a number, 0 or more");
        quantity += qty->get<long long>();
        total += qty->get<long long>() * price->get<double>();
    }
    return answer(reply, 200, {{"items", doc["items"].size()}, {"quantity", quantity}, {"total", total}});
}

}  // namespace

CSP_CPP_HANDLER(order)
