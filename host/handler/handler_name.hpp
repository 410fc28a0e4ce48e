// What a handler may be called, and which files in the handlers folder are handlers.
#pragma once

#include <string>
#include <string_view>

namespace cspd {

/// Handler names are [A-Za-z0-9_-]{1,255}: nothing else reaches the handler table.
bool is_valid_handler_name(std::string_view name) noexcept;

/// "hello" for "hello.so" (and, with `sources`, for "hello.c" and "hello.cpp"); empty if the
/// file name is not a handler's.
std::string handler_name_of_file(std::string_view file_name, bool sources = false);

/// "hello" for "hello.conf" and "hello.json", a handler's configuration; empty otherwise.
std::string handler_name_of_config(std::string_view file_name);

}  // namespace cspd
