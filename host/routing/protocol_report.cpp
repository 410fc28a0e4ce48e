#include "routing/protocol_report.hpp"

#include "routing/prometheus_text.hpp"
#include "stats/shared_stats.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>

namespace cspd {
namespace {

const char* const kProtocolNames[] = {"HTTP/1.1", "HTTP/2"};

struct ProtocolSummary {
    std::uint64_t requests[2]{}, connections = 0, streams = 0, resets_received = 0;
    std::uint64_t resets_sent[kH2ErrorCodes]{}, goaways[std::size_t(H2Goaway::count)]{};
    std::uint64_t ws_opened = 0, ws_closed = 0, ws_messages_in = 0, ws_messages_out = 0, ws_bytes_in = 0,
                  ws_bytes_out = 0, ws_delivered = 0, ws_gaps_told = 0, ws_closes[kWsCloseKinds]{};
};

ProtocolSummary summarize_protocols(const SharedStats& stats) {
    ProtocolSummary sum;
    const unsigned slots = std::min(stats.slot_count.load(std::memory_order_relaxed), kMaxSlots);
    for (unsigned s = 0; s < slots; ++s) {
        const LoopSlot& slot = stats.slots[s];
        for (std::size_t p = 0; p < 2; ++p) sum.requests[p] += read(slot.protocol_requests[p]);
        sum.connections += read(slot.h2_connections);
        sum.streams += read(slot.h2_streams);
        sum.resets_received += read(slot.h2_resets_received);
        for (std::size_t e = 0; e < kH2ErrorCodes; ++e) sum.resets_sent[e] += read(slot.h2_resets_sent[e]);
        for (std::size_t g = 0; g < std::size_t(H2Goaway::count); ++g) sum.goaways[g] += read(slot.h2_goaways[g]);
        sum.ws_opened += read(slot.ws_opened);
        sum.ws_closed += read(slot.ws_closed);
        sum.ws_messages_in += read(slot.ws_messages_in);
        sum.ws_messages_out += read(slot.ws_messages_out);
        sum.ws_bytes_in += read(slot.ws_bytes_in);
        sum.ws_bytes_out += read(slot.ws_bytes_out);
        sum.ws_delivered += read(slot.ws_delivered);
        sum.ws_gaps_told += read(slot.ws_gaps_told);
        for (std::size_t k = 0; k < kWsCloseKinds; ++k) sum.ws_closes[k] += read(slot.ws_closes[k]);
    }
    return sum;
}

}  // namespace

void protocol_metrics(std::string& out, const SharedStats& stats) {
    const ProtocolSummary sum = summarize_protocols(stats);
    family(out, "cspd_requests_by_protocol_total", "counter", "Requests routed, by protocol (HTTP/1.x, HTTP/2).");
    for (std::size_t p = 0; p < 2; ++p)
        sample(out, "cspd_requests_by_protocol_total", std::string("protocol=\"") + kProtocolNames[p] + "\"",
               double(sum.requests[p]));
    family(out, "cspd_http2_connections_total", "counter", "HTTP/2 connections (h2 by ALPN, h2c by prior knowledge).");
    sample(out, "cspd_http2_connections_total", "", double(sum.connections));
    family(out, "cspd_http2_streams_total", "counter", "Streams clients opened on HTTP/2 connections.");
    sample(out, "cspd_http2_streams_total", "", double(sum.streams));
    family(out, "cspd_http2_resets_received_total", "counter", "RST_STREAM frames clients sent.");
    sample(out, "cspd_http2_resets_received_total", "", double(sum.resets_received));
    family(out, "cspd_http2_resets_sent_total", "counter", "RST_STREAM frames the server sent, by error code.");
    for (std::size_t e = 0; e < kH2ErrorCodes; ++e)
        sample(out, "cspd_http2_resets_sent_total", std::string("code=\"") + kH2ErrorNames[e] + "\"",
               double(sum.resets_sent[e]));
    family(out, "cspd_http2_goaways_sent_total", "counter", "GOAWAY frames the server sent, by reason.");
    for (std::size_t g = 0; g < std::size_t(H2Goaway::count); ++g)
        sample(out, "cspd_http2_goaways_sent_total", std::string("reason=\"") + kH2GoawayNames[g] + "\"",
               double(sum.goaways[g]));
    family(out, "cspd_websockets_open", "gauge", "WebSocket conversations open now.");
    sample(out, "cspd_websockets_open", "", double(sum.ws_opened - std::min(sum.ws_opened, sum.ws_closed)));
    family(out, "cspd_websockets_total", "counter", "WebSocket conversations accepted.");
    sample(out, "cspd_websockets_total", "", double(sum.ws_opened));
    family(out, "cspd_websocket_messages_total", "counter", "Whole WebSocket messages, by direction (out: publishes included).");
    sample(out, "cspd_websocket_messages_total", "direction=\"in\"", double(sum.ws_messages_in));
    sample(out, "cspd_websocket_messages_total", "direction=\"out\"", double(sum.ws_messages_out));
    family(out, "cspd_websocket_bytes_total", "counter", "WebSocket bytes on the wire, frames and all, by direction.");
    sample(out, "cspd_websocket_bytes_total", "direction=\"in\"", double(sum.ws_bytes_in));
    sample(out, "cspd_websocket_bytes_total", "direction=\"out\"", double(sum.ws_bytes_out));
    family(out, "cspd_websocket_closes_total", "counter", "WebSocket conversations ended, by close code (1006: without a close frame).");
    for (std::size_t k = 0; k < kWsCloseKinds; ++k)
        sample(out, "cspd_websocket_closes_total", std::string("code=\"") + kWsCloseNames[k] + "\"",
               double(sum.ws_closes[k]));
    family(out, "cspd_websocket_published_deliveries_total", "counter",
           "Published messages put in a subscriber's outbox (the fan-out of csp_publish).");
    sample(out, "cspd_websocket_published_deliveries_total", "", double(sum.ws_delivered));
    family(out, "cspd_websocket_topic_gaps_told_total", "counter",
           "Subscribers told by on_topic_gap that a topic lost messages across hosts (older handlers' "
           "conversations are closed with 1012 instead).");
    sample(out, "cspd_websocket_topic_gaps_told_total", "", double(sum.ws_gaps_told));
}

void add_protocol_status(nlohmann::ordered_json& doc, const SharedStats& stats) {
    const ProtocolSummary sum = summarize_protocols(stats);
    doc["http1"] = {{"requests", sum.requests[0]}};
    nlohmann::ordered_json http2;
    http2["requests"] = sum.requests[1];
    http2["connections"] = sum.connections;
    http2["streams"] = sum.streams;
    http2["streams_per_connection"] = sum.connections ? double(sum.streams) / double(sum.connections) : 0.0;
    http2["resets_received"] = sum.resets_received;
    auto& sent = http2["resets_sent"] = nlohmann::ordered_json::object();
    for (std::size_t e = 0; e < kH2ErrorCodes; ++e)
        if (sum.resets_sent[e]) sent[kH2ErrorNames[e]] = sum.resets_sent[e];
    auto& goaways = http2["goaways_sent"] = nlohmann::ordered_json::object();
    for (std::size_t g = 0; g < std::size_t(H2Goaway::count); ++g) goaways[kH2GoawayNames[g]] = sum.goaways[g];
    doc["http2"] = std::move(http2);
    nlohmann::ordered_json ws;
    ws["open"] = sum.ws_opened - std::min(sum.ws_opened, sum.ws_closed);
    ws["accepted"] = sum.ws_opened;
    ws["messages_in"] = sum.ws_messages_in;
    ws["messages_out"] = sum.ws_messages_out;
    ws["bytes_in"] = sum.ws_bytes_in;
    ws["bytes_out"] = sum.ws_bytes_out;
    ws["published_deliveries"] = sum.ws_delivered;
    ws["topic_gaps_told"] = sum.ws_gaps_told;
    auto& closes = ws["closes"] = nlohmann::ordered_json::object();
    for (std::size_t k = 0; k < kWsCloseKinds; ++k)
        if (sum.ws_closes[k]) closes[kWsCloseNames[k]] = sum.ws_closes[k];
    doc["websocket"] = std::move(ws);
}

}  // namespace cspd
