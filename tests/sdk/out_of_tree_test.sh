#!/usr/bin/env bash
# Installs cspd into a temporary prefix, builds examples/ against it both ways a user
# would (a CMake project with find_package(cspd), and one compiler line with pkg-config,
# in C and in C++), drops the results into the installed cspd while it runs, and checks
# their answers over HTTP.   usage: out_of_tree_test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1
src=$2
work=$(mktemp -d)
pid=
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; [ -f "$work/cspd.log" ] && cat "$work/cspd.log"; exit 1; }

cmake --install "$build" --prefix "$work/prefix" > "$work/install.log" || fail "cmake --install"
pc_dir=$(dirname "$(find "$work/prefix" -name cspd-sdk.pc | head -1)")
[ -n "$pc_dir" ] || fail "no cspd-sdk.pc installed"

# 1. A CMake project elsewhere: find_package(cspd) + csp_add_handler.
cmake -S "$src/examples" -B "$work/cmake-build" -DCMAKE_PREFIX_PATH="$work/prefix" \
  -DCMAKE_BUILD_TYPE=Release > "$work/configure.log" 2>&1 || { cat "$work/configure.log"; fail "configure examples"; }
cmake --build "$work/cmake-build" -j2 > "$work/build.log" 2>&1 || { cat "$work/build.log"; fail "build examples"; }

# 2. One line each, with pkg-config, C++ and C.
mkdir -p "$work/one-line"
cflags=$(PKG_CONFIG_PATH="$pc_dir" pkg-config --cflags cspd-sdk)
c++ -O2 -shared -fPIC $cflags "$src/examples/greet.cpp" -o "$work/one-line/greet_pc.so" || fail "c++ one-liner"
cc -O2 -shared -fPIC $cflags "$src/examples/visits.c" -o "$work/one-line/visits_pc.so" || fail "cc one-liner"
cc -O2 -shared -fPIC $cflags "$src/examples/ws_echo.c" -o "$work/one-line/ws_echo.so" || fail "cc ws_echo"
c++ -std=c++20 -O2 -shared -fPIC $cflags "$src/examples/chat.cpp" -o "$work/one-line/chat.so" || fail "c++ chat"

# `cspd new` skeletons build as they are, in both languages.
(cd "$work/one-line" && "$work/prefix/bin/cspd" new hi_c --lang c && "$work/prefix/bin/cspd" new hi_cpp) \
  > /dev/null || fail "cspd new"
cc -O2 -shared -fPIC $cflags "$work/one-line/hi_c.c" -o "$work/one-line/hi_c.so" || fail "build the C skeleton"
c++ -O2 -shared -fPIC $cflags "$work/one-line/hi_cpp.cpp" -o "$work/one-line/hi_cpp.so" || fail "build the C++ skeleton"
"$work/prefix/bin/cspd" new hi_c --lang c --dir "$work/one-line" 2>/dev/null && fail "cspd new overwrote a file"
"$work/prefix/bin/cspd" new "bad name" 2>/dev/null && fail "cspd new took an invalid name"

# Only the entry point is exported.
exported=$(nm -D --defined-only "$work/one-line/greet_pc.so" | awk '{print $3}' | grep -v '^_' | sort | tr '\n' ' ')
[ "$exported" = "csp_handler " ] || fail "greet_pc.so exports more than csp_handler: $exported"

# The installed server, started with an empty folder; handlers arrive while it runs. Started as
# root its workers run as nobody, who must be able to reach the folders.
mkdir -p "$work/handlers" "$work/www"
chmod 755 "$work"
"$work/prefix/bin/cspd" --port 0 --bind 127.0.0.1 --workers 1 --handlers "$work/handlers" --www "$work/www" \
  2> "$work/cspd.log" &
pid=$!
port=
for _ in $(seq 100); do
  port=$(grep -oE 'listening on 127\.0\.0\.1:[0-9]+' "$work/cspd.log" | grep -oE '[0-9]+$' || true)
  [ -n "$port" ] && break
  sleep 0.05
done
[ -n "$port" ] || fail "cspd did not start"
cp "$work/cmake-build/greet.so" "$work/cmake-build/visits.so" "$work/one-line/greet_pc.so" \
  "$work/one-line/visits_pc.so" "$work/one-line/hi_c.so" "$work/one-line/hi_cpp.so" "$work/handlers/"

expect() {  # expect PATH BODY
  local got=
  for _ in $(seq 40); do
    got=$(curl -s "http://127.0.0.1:$port$1" || true)
    [ "$got" = "$2" ] && return 0
    sleep 0.05
  done
  fail "GET $1 answered '$got', expected '$2'"
}
expect "/csp/greet?name=Eva" "Hello, Eva!"
expect "/csp/greet_pc?name=Ana%20Lu" "Hello, Ana Lu!"
expect "/csp/visits" "visit 1"
expect "/csp/visits" "visit 2"
# The same code under another name shares the count: it lives in the server-wide store.
expect "/csp/visits_pc" "visit 3"
expect "/csp/hi_c?name=Eva" "Hello, Eva, from hi_c!"
expect "/csp/hi_cpp" "Hello from hi_cpp!"
echo "out-of-tree handlers: built with find_package(cspd), with pkg-config, and from cspd new skeletons; all answered"
