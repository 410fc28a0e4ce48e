// Prometheus' text format, as /metrics writes it: a family's HELP and TYPE lines, one sample,
// and a label value escaped.
#pragma once

#include <cstdio>
#include <string>
#include <string_view>

namespace cspd {

/// A label value with backslashes, quotes and line breaks escaped.
inline std::string label(std::string_view value) {
    std::string out;
    for (char c : value) {
        if (c == '\\' || c == '"') out += '\\';
        if (c == '\n') {
            out += "\\n";
            continue;
        }
        out += c;
    }
    return out;
}

inline void family(std::string& out, const char* name, const char* type, const char* help) {
    out.append("# HELP ").append(name).append(" ").append(help).append("\n");
    out.append("# TYPE ").append(name).append(" ").append(type).append("\n");
}

inline void sample(std::string& out, const std::string& name, const std::string& labels, double value) {
    char number[32];
    std::snprintf(number, sizeof number, "%.17g", value);
    out.append(name);
    if (!labels.empty()) out.append("{").append(labels).append("}");
    out.append(" ").append(number).append("\n");
}

}  // namespace cspd
