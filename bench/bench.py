#!/usr/bin/env python3
"""Side-by-side HTTP benchmark: cspd against nginx, h2o, lighttpd (and PHP's
built-in server as the historical reference), on /csp/hello and /csp/xpng.

Every server gets one worker / one event loop pinned to CPU 0; the load
generator runs pinned to CPU 1; all traffic stays on 127.0.0.1. Servers are
measured alternately in the same run, each figure is the median of several
runs, and the server's CPU time per request comes from /proc/PID/task/*/schedstat.

Run through bench/run, which installs the tools and builds cspd first.
"""
import argparse
import base64
import datetime
import json
import os
import platform
import re
import resource
import selectors
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from harness import work_folder

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
PIXEL_B64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVQImWP4////fwAJ+wP9CNHoHgAAAABJRU5ErkJggg=="
HELLO = "<h1>HELLO WORLD</h1>"
SERVER_CPU, CLIENT_CPU = "0", "1"
ENDPOINTS = ["hello", "xpng"]
BASE_PORT = 18800
FD_LIMIT = min(resource.getrlimit(resource.RLIMIT_NOFILE)[1], 65536)


# --- servers -------------------------------------------------------------------

class Server:
    """A peer under test: writes its config, starts pinned to SERVER_CPU, stops."""

    def __init__(self, name, port, work, description):
        self.name, self.port, self.description = name, port, description
        self.work = work / re.sub(r"[^a-z0-9]", "", name)
        self.work.mkdir(parents=True, exist_ok=True)
        self.proc = None

    def command(self):
        raise NotImplementedError

    def start(self):
        log = open(self.work / "server.log", "wb")
        self.proc = subprocess.Popen(["taskset", "-c", SERVER_CPU] + self.command(), stdout=log, stderr=log,
                                     cwd=self.work, start_new_session=True)
        deadline = time.time() + 10
        while time.time() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    break
            except OSError:
                time.sleep(0.05)
        else:
            raise RuntimeError(f"{self.name} did not start; see {self.work / 'server.log'}")
        for endpoint in ENDPOINTS:  # every peer must answer the same bytes
            status, body = http_get(self.port, f"/csp/{endpoint}")
            expected = HELLO.encode() if endpoint == "hello" else base64.b64decode(PIXEL_B64)
            if status != 200 or body != expected:
                raise RuntimeError(f"{self.name} answers /csp/{endpoint} with {status} {body[:60]!r}")

    def pid(self):
        return self.proc.pid

    def pids(self):
        """The server's process and its descendants (a master's workers count too)."""
        found, queue = [], [self.pid()]
        while queue:
            pid = queue.pop()
            found.append(pid)
            try:
                for task in Path(f"/proc/{pid}/task").iterdir():
                    queue += [int(c) for c in (task / "children").read_text().split()]
            except (FileNotFoundError, ProcessLookupError):
                pass
        return found

    def cpu_ns(self, only=None):
        """CPU time of the server's processes (`only`: those whose command line has that word)."""
        total = 0
        for pid in self.pids():
            try:
                if only and only not in Path(f"/proc/{pid}/cmdline").read_text():
                    continue
                for task in Path(f"/proc/{pid}/task").iterdir():
                    total += int((task / "schedstat").read_text().split()[0])
            except (FileNotFoundError, ProcessLookupError):
                pass
        return total

    def rss_kib(self):
        total = 0
        for pid in self.pids():
            try:
                for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
            except (FileNotFoundError, ProcessLookupError):
                pass
        return total

    def stop(self):
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()


def static_tree(work):
    """The two endpoints as files, for the servers that serve them statically."""
    www = work / "www" / "csp"
    www.mkdir(parents=True, exist_ok=True)
    (www / "hello.html").write_text(HELLO)
    (www / "xpng.png").write_bytes(base64.b64decode(PIXEL_B64))
    return work / "www"


class Cspd(Server):
    def __init__(self, port, work, binary, handlers, name="cspd", extra=()):
        super().__init__(name, port, work, "master + 1 worker process with 1 event loop (--workers 1), "
                         "handlers hello.so and xpng.so" + ("" if name == "cspd" else f" ({binary})") +
                         (" " + " ".join(extra) if extra else ""))
        self.binary, self.handlers, self.extra = binary, handlers, list(extra)

    def command(self):
        return [str(self.binary), "--port", str(self.port), "--bind", "127.0.0.1", "--workers", "1",
                "--handlers", str(self.handlers), "--www", str(ROOT / "www"), "--log-level", "warn",
                "--keepalive-timeout", "120"] + self.extra


class Ceiling(Server):
    """bench/ceiling: canned responses straight from the kernel path, the floor of CPU per request."""

    def __init__(self, name, port, work, binary, description):
        super().__init__(name, port, work, description)
        self.binary, self.www = binary, static_tree(self.work)

    def command(self):
        return [str(self.binary), str(self.port), str(self.www / "csp" / "hello.html"), str(self.www / "csp" / "xpng.png")]


CEILINGS = {"epoll ceiling": ("epoll_ceiling", "bench/ceiling/epoll_ceiling.cpp: one thread, level-triggered epoll, "
                              "one recv and one send per ready connection, canned responses (no HTTP parsing)"),
            "io_uring ceiling": ("uring_ceiling", "bench/ceiling/uring_ceiling.cpp: one thread, SINGLE_ISSUER | "
                                 "DEFER_TASKRUN, multishot accept into direct descriptors, multishot recv into a "
                                 "provided-buffer ring, send (linked shutdown and close in close mode), one "
                                 "io_uring_enter per pass, canned responses")}


class Nginx(Server):
    def __init__(self, port, work, access_log=False):
        super().__init__("nginx+log" if access_log else "nginx", port, work,
                         "1 worker process (master_process off), `return 200` for hello, static file with "
                         "open_file_cache for xpng, " +
                         ("access_log combined buffer=64k" if access_log else "access log off") +
                         ", listen ... deferred reuseport")
        log_directive = f"access_log {self.work}/access.log combined buffer=64k;" if access_log else "access_log off;"
        www = static_tree(self.work)
        (self.work / "nginx.conf").write_text(f"""
worker_processes 1;
daemon off;
master_process off;
worker_rlimit_nofile {FD_LIMIT};
error_log {self.work}/error.log warn;
pid {self.work}/nginx.pid;
events {{ worker_connections {FD_LIMIT - 100}; }}
http {{
  {log_directive}
  keepalive_requests 100000000;
  keepalive_timeout 120s;
  open_file_cache max=1000 inactive=60s;
  open_file_cache_valid 60s;
  client_body_temp_path {self.work}; proxy_temp_path {self.work}; fastcgi_temp_path {self.work};
  uwsgi_temp_path {self.work}; scgi_temp_path {self.work};
  server {{
    listen 127.0.0.1:{port} reuseport backlog=4096 deferred;
    root {www};
    location = /csp/hello {{ default_type text/html; return 200 "{HELLO}"; }}
    location = /csp/xpng {{ default_type image/png; try_files /csp/xpng.png =404; }}
  }}
}}
""")

    def command(self):
        return ["nginx", "-c", str(self.work / "nginx.conf"), "-e", str(self.work / "error.log")]


class H2o(Server):
    def __init__(self, port, work):
        super().__init__("h2o", port, work, "num-threads 1, both endpoints as static files (file.file), no access log")
        www = static_tree(self.work)
        (self.work / "h2o.conf").write_text(f"""
num-threads: 1
user: root
max-connections: {FD_LIMIT - 100}
error-log: {self.work}/error.log
pid-file: {self.work}/h2o.pid
http1-request-timeout: 120
listen:
  host: 127.0.0.1
  port: {port}
hosts:
  default:
    paths:
      /csp/hello:
        file.file: {www}/csp/hello.html
      /csp/xpng:
        file.file: {www}/csp/xpng.png
""")

    def command(self):
        return ["h2o", "-c", str(self.work / "h2o.conf")]


class Lighttpd(Server):
    def __init__(self, port, work):
        super().__init__("lighttpd", port, work, "1 process, both endpoints as static files (url.rewrite to .html/.png), no access log, "
                         "server.defer-accept")
        www = static_tree(self.work)
        (self.work / "lighttpd.conf").write_text(f"""
server.document-root = "{www}"
server.port = {port}
server.bind = "127.0.0.1"
server.errorlog = "{self.work}/error.log"
server.max-keep-alive-requests = 100000000
server.max-keep-alive-idle = 120
server.max-connections = {(FD_LIMIT - 100) // 2}
server.max-fds = {FD_LIMIT}
server.defer-accept = 1
url.rewrite-once = ( "^/csp/hello$" => "/csp/hello.html", "^/csp/xpng$" => "/csp/xpng.png" )
server.modules = ( "mod_rewrite" )
mimetype.assign = ( ".html" => "text/html", ".png" => "image/png" )
""")

    def command(self):
        return ["lighttpd", "-D", "-f", str(self.work / "lighttpd.conf")]


class Php(Server):
    def __init__(self, port, work):
        super().__init__("php -S", port, work, "the seed article's script under PHP's built-in server (single process)")
        (self.work / "router.php").write_text(f"""<?php
$path = parse_url($_SERVER["REQUEST_URI"], PHP_URL_PATH);
if ($path === "/csp/xpng") {{
    header("Content-type: image/png");
    echo base64_decode("{PIXEL_B64}");
}} elseif ($path === "/csp/hello") {{
    echo "{HELLO}";
}} else {{
    http_response_code(404);
}}
""")

    def command(self):
        return ["php", "-S", f"127.0.0.1:{self.port}", str(self.work / "router.php")]


def http_get(port, path):
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(f"GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n".encode())
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    return status, body


# --- load generators ---------------------------------------------------------------

def parse_duration_ms(text):
    value, unit = re.match(r"([\d.]+)(us|ms|s|m)", text).groups()
    return float(value) * {"us": 0.001, "ms": 1, "s": 1000, "m": 60000}[unit]


def run_wrk(server, endpoint, mode, seconds, connections=64):
    url = f"http://127.0.0.1:{server.port}/csp/{endpoint}"
    cmd = ["taskset", "-c", CLIENT_CPU, "wrk", "-t1", f"-c{connections}", f"-d{seconds}s", "--latency",
           "--timeout", "2s"]
    env = dict(os.environ)
    if mode == "pipelined":
        cmd += ["-s", str(HERE / "pipeline.lua")]
        env["PIPELINE_DEPTH"] = "16"
    elif mode == "close":
        cmd += ["-H", "Connection: close"]
    before = server.cpu_ns()
    out = subprocess.run(cmd + [url], capture_output=True, text=True, env=env, timeout=seconds + 30).stdout
    cpu = server.cpu_ns() - before
    requests = int(re.search(r"(\d+) requests in", out).group(1))
    errors = sum(int(n) for n in re.findall(r"(?:connect|read|write|timeout) (\d+)", out))
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    # wrk leaves a percentile at 0 when it has no sample for it (it times pipelined batches, not
    # each request): report that as missing rather than as zero.
    latency = {k: v for k, v in re.findall(r"^\s+(50|99)%\s+(\S+)", out, re.M) if parse_duration_ms(v) > 0}
    return {
        "rps": float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1)),
        "p50_ms": parse_duration_ms(latency["50"]) if "50" in latency else None,
        "p99_ms": parse_duration_ms(latency["99"]) if "99" in latency else None,
        "cpu_us_per_req": cpu / 1000 / requests if requests else None,
        "requests": requests,
        "errors": errors + (int(non2xx.group(1)) if non2xx else 0),
    }


def run_ab(server, endpoint):
    """The articles' own measurement: ab -n 1000 -c 1000, a new connection per request."""
    url = f"http://127.0.0.1:{server.port}/csp/{endpoint}"
    before = server.cpu_ns()
    out = subprocess.run(["taskset", "-c", CLIENT_CPU, "ab", "-q", "-r", "-s", "10", "-n", "1000", "-c", "1000", url],
                         capture_output=True, text=True, timeout=120).stdout
    cpu = server.cpu_ns() - before
    rps = re.search(r"Requests per second:\s+([\d.]+)", out)
    failed = re.search(r"Failed requests:\s+(\d+)", out)
    p50 = re.search(r"^\s+50%\s+(\d+)", out, re.M)
    p99 = re.search(r"^\s+99%\s+(\d+)", out, re.M)
    return {
        "rps": float(rps.group(1)) if rps else 0.0,
        "p50_ms": float(p50.group(1)) if p50 else None,
        "p99_ms": float(p99.group(1)) if p99 else None,
        "cpu_us_per_req": cpu / 1000 / 1000,
        "requests": 1000,
        "errors": int(failed.group(1)) if failed else 1000,
    }


# --- extra measurements -------------------------------------------------------------

def idle_connection_rss(server, count, port=None, request=b"GET /csp/hello HTTP/1.1\r\nHost: localhost\r\n\r\n",
                        answered_by=lambda received: b"\r\n\r\n" in received, then=b""):
    """RSS growth per idle connection: `count` clients each send `request` (HTTP/1.1 by default) to
    `port` (the server's), read until `answered_by` says the answer came, send `then`, and idle."""
    base = server.rss_kib()
    sel = selectors.DefaultSelector()
    socks, pending = [], {}
    for _ in range(count):
        s = socket.socket()
        s.setblocking(False)
        s.connect_ex(("127.0.0.1", port or server.port))
        socks.append(s)
        sel.register(s, selectors.EVENT_WRITE)
        pending[s] = b""
    answered = 0
    deadline = time.time() + 60
    while answered < count and time.time() < deadline:
        for key, events in sel.select(timeout=1):
            s = key.fileobj
            if events & selectors.EVENT_WRITE:
                s.send(request)
                sel.modify(s, selectors.EVENT_READ)
            else:
                data = s.recv(65536)
                pending[s] += data
                if answered_by(pending[s]) or not data:
                    if then:
                        s.send(then)
                    sel.unregister(s)
                    answered += 1
    time.sleep(3)  # idle long enough for servers that release per-connection buffers
    grown = server.rss_kib() - base
    for s in socks:
        s.close()
    return {"connections": count, "answered": answered, "rss_growth_kib": grown,
            "bytes_per_connection": grown * 1024 / max(answered, 1)}


def reload_under_load(server, seconds, swaps_per_second=10):
    """cspd only: keep-alive throughput while hello.so is replaced by a new version `swaps_per_second`
    times a second (bench/reload.py measures this alone, with 1 and 2 workers)."""
    baseline = run_wrk(server, "hello", "keepalive", seconds)
    source = server.handlers / "hello.so"
    image = source.read_bytes()
    stop = threading.Event()
    swaps = [0]

    def swapper():
        while not stop.is_set():
            temporary = server.handlers / ".hello.so.part"
            # A new version each time (a counter after the ELF image changes its hash, not its code):
            # vetted and loaded for real, not recognised as a version already vetted.
            temporary.write_bytes(image + swaps[0].to_bytes(8, "little"))
            os.replace(temporary, source)
            swaps[0] += 1
            stop.wait(1 / swaps_per_second)

    thread = threading.Thread(target=swapper)
    thread.start()
    loaded = run_wrk(server, "hello", "keepalive", seconds)
    stop.set()
    thread.join()
    return {"baseline_rps": baseline["rps"], "reloading_rps": loaded["rps"], "swaps": swaps[0],
            "ratio": loaded["rps"] / baseline["rps"], "errors": loaded["errors"], "requests": loaded["requests"]}


# --- reporting ---------------------------------------------------------------------

MODES = ["keepalive", "pipelined", "close", "ab"]
MODE_TITLES = {
    "keepalive": "keep-alive (wrk, 64 conns)",
    "pipelined": "pipelined x16 (wrk, 64 conns)",
    "close": "new connection per request (wrk, 64 conns)",
    "ab": "ab -n 1000 -c 1000",
}


def median_of(runs, key):
    values = [r[key] for r in runs if r.get(key) is not None]
    return statistics.median(values) if values else None


def summarize(raw, servers, modes):
    rows = []
    for mode in modes:
        for endpoint in ENDPOINTS:
            row = {"mode": mode, "endpoint": endpoint, "servers": {}}
            for name in servers:
                runs = raw[mode][endpoint][name]
                row["servers"][name] = {k: median_of(runs, k) for k in
                                        ("rps", "p50_ms", "p99_ms", "cpu_us_per_req")}
                row["servers"][name]["errors"] = sum(r["errors"] for r in runs)
            # Not peers: php -S (the historical reference), the ceilings, and an earlier cspd (--baseline).
            peers = {n: v for n, v in row["servers"].items()
                     if n not in ("cspd", "php -S", "cspd-before") and n not in CEILINGS and not n.endswith("+log")}
            me = row["servers"]["cspd"]
            row["best_peer"] = row["rps_ratio"] = row["leanest_peer"] = row["cpu_ratio"] = None
            if peers:  # --only may leave none (the ceilings alone)
                best = max(peers, key=lambda n: peers[n]["rps"] or 0)
                leanest = min(peers, key=lambda n: peers[n]["cpu_us_per_req"] or float("inf"))
                row["best_peer"] = best
                row["rps_ratio"] = me["rps"] / peers[best]["rps"] if peers[best]["rps"] else None
                row["leanest_peer"] = leanest
                row["cpu_ratio"] = (me["cpu_us_per_req"] / peers[leanest]["cpu_us_per_req"]
                                    if peers[leanest]["cpu_us_per_req"] else None)
            # Against each ceiling: cspd's CPU per request over the ceiling's, and its req/s over the ceiling's.
            row["ceilings"] = {}
            for name in servers:
                if name in CEILINGS and row["servers"][name]["cpu_us_per_req"] and row["servers"][name]["rps"]:
                    c = row["servers"][name]
                    row["ceilings"][name] = {"cpu_ratio": (me["cpu_us_per_req"] or 0) / c["cpu_us_per_req"],
                                             "rps_ratio": (me["rps"] or 0) / c["rps"]}
            rows.append(row)
    return rows


def fmt(value, digits=1):
    return "—" if value is None else f"{value:,.{digits}f}"


def access_log_cost(rows):
    """CPU per request with the access log over without, for cspd and for nginx, per mode and endpoint."""
    cost = {}
    for row in rows:
        s = row["servers"]
        ratio = {}
        for name in ("cspd", "nginx"):
            on, off = s.get(name + "+log", {}).get("cpu_us_per_req"), s.get(name, {}).get("cpu_us_per_req")
            ratio[name] = round(on / off, 3) if on and off else None
        cost[f"{row['mode']} {row['endpoint']}"] = ratio
    return cost


def markdown(report):
    lines = [f"# cspd benchmark — {report['date']}", "",
             f"Machine: {report['machine']}. Each figure: median of {report['runs']} runs of {report['seconds']} s "
             f"(ab: {report['runs']} runs of 1000 requests). Server on CPU {SERVER_CPU}, client on CPU {CLIENT_CPU}.",
             "", "Reproduce: `bash bench/run`", "",
             "| mode | endpoint | server | req/s | p50 ms | p99 ms | CPU µs/req | errors |",
             "|---|---|---|---:|---:|---:|---:|---:|"]
    for row in report["rows"]:
        for name, v in row["servers"].items():
            lines.append(f"| {MODE_TITLES[row['mode']]} | /csp/{row['endpoint']} | {name} | {fmt(v['rps'], 0)} | "
                         f"{fmt(v['p50_ms'], 2)} | {fmt(v['p99_ms'], 2)} | {fmt(v['cpu_us_per_req'], 2)} | {v['errors']} |")
    lines += ["", "## cspd against the best peer (same run)", "",
              "| mode | endpoint | best peer (req/s) | cspd / best peer, req/s | leanest peer (CPU) | cspd / leanest, CPU per request |",
              "|---|---|---|---:|---|---:|"]
    for row in report["rows"]:
        lines.append(f"| {MODE_TITLES[row['mode']]} | /csp/{row['endpoint']} | {row['best_peer']} | "
                     f"{fmt(row['rps_ratio'], 2)}× | {row['leanest_peer']} | {fmt(row['cpu_ratio'], 2)}× |")
    ceilings = [n for n in CEILINGS if n in report["descriptions"]]
    if ceilings:
        lines += ["", "## cspd against the ceilings (same run)", "",
                  "CPU per request: cspd's over the ceiling's (1.00× is the floor). req/s: cspd's over the ceiling's.",
                  "", "| mode | endpoint | " + " | ".join(f"CPU vs {n} | req/s vs {n}" for n in ceilings) + " |",
                  "|---|---|" + "---:|---:|" * len(ceilings)]
        for row in report["rows"]:
            cells = []
            for n in ceilings:
                c = row.get("ceilings", {}).get(n)
                cells += [f"{fmt(c['cpu_ratio'], 2)}×", f"{fmt(c['rps_ratio'], 2)}"] if c else ["—", "—"]
            lines.append(f"| {MODE_TITLES[row['mode']]} | /csp/{row['endpoint']} | " + " | ".join(cells) + " |")
        if len(ceilings) == 2:
            lines += ["", "| mode | endpoint | io_uring ceiling CPU/req over epoll ceiling's |", "|---|---|---:|"]
            for row in report["rows"]:
                e, u = row["servers"]["epoll ceiling"], row["servers"]["io_uring ceiling"]
                ratio = u["cpu_us_per_req"] / e["cpu_us_per_req"] if e["cpu_us_per_req"] and u["cpu_us_per_req"] else None
                lines.append(f"| {MODE_TITLES[row['mode']]} | /csp/{row['endpoint']} | {fmt(ratio, 3)}× |")
    if report.get("idle"):
        lines += ["", f"## Idle keep-alive connections ({report['idle_connections']:,} open)", "",
                  "| server | answered | RSS growth | per connection |", "|---|---:|---:|---:|"]
        for name, v in report["idle"].items():
            lines.append(f"| {name} | {v['answered']:,} | {v['rss_growth_kib']:,} KiB | {v['bytes_per_connection']:,.0f} B |")
    if report.get("reload"):
        r = report["reload"]
        lines += ["", "## Hot reload under load (cspd, keep-alive /csp/hello)", "",
                  f"{r['swaps']} replacements of hello.so at 10 per second: {r['reloading_rps']:,.0f} req/s against "
                  f"{r['baseline_rps']:,.0f} without ({r['ratio'] * 100:.1f}%), {r['errors']} failed requests "
                  f"out of {r['requests']:,}."]
    if report.get("access_log_cost"):
        lines += ["", "## What the access log costs (CPU per request, with it / without it, same run)", "",
                  "| mode and endpoint | cspd | nginx (buffer=64k) |", "|---|---:|---:|"]
        for key, ratio in report["access_log_cost"].items():
            lines.append(f"| {key} | {fmt(ratio['cspd'], 3)}× | {fmt(ratio['nginx'], 3)}× |")
    lines += ["", "## What each server was given", ""]
    for name, description in report["descriptions"].items():
        lines.append(f"- **{name}**: {description}")
    return "\n".join(lines) + "\n"


def chart(report, out_dir):
    """Grouped bars of req/s per mode and endpoint, one colour per server (log scale)."""
    names = list(report["descriptions"])
    data = out_dir / "chart.dat"
    with open(data, "w") as f:
        f.write("case " + " ".join(f'"{n}"' for n in names) + "\n")
        for row in report["rows"]:
            label = f"{row['mode']}/{row['endpoint']}"
            f.write(f'"{label}" ' + " ".join(str(row["servers"][n]["rps"] or 0) for n in names) + "\n")
    script = f"""
set terminal svg size 1000,480 dynamic font "sans,11"
set output "{out_dir / 'chart.svg'}"
set title "requests per second (log scale; higher is better) — one worker each, {report['machine_short']}"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.9 border -1
set logscale y
set yrange [100:*]
set grid ytics
set key top right
set xtics rotate by -20
plot for [i=2:{len(names) + 1}] "{data}" using i:xtic(1) title columnhead(i)
"""
    subprocess.run(["gnuplot"], input=script, text=True, check=True)


def machine_description():
    model = "unknown CPU"
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            model = line.split(":", 1)[1].strip()
            break
    mem = int(Path("/proc/meminfo").read_text().split()[1]) // (1024 * 1024)
    return f"{os.cpu_count()} × {model}, {mem} GiB, Linux {platform.release()}", f"{os.cpu_count()} cores"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cspd", type=Path, required=True, help="cspd binary (Release)")
    parser.add_argument("--handlers", type=Path, required=True, help="folder with hello.so and xpng.so")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--idle-connections", type=int, default=10000)
    parser.add_argument("--out", type=Path, default=HERE / "results")
    parser.add_argument("--ceilings", type=Path, default=None, metavar="DIR",
                        help="folder with epoll_ceiling and uring_ceiling (bench/ceiling, built with the bench)")
    parser.add_argument("--modes", default=",".join(MODES),
                        help=f"comma-separated modes to run (default: all of {','.join(MODES)})")
    parser.add_argument("--only", default="", help="comma-separated server names to run (default: all)")
    parser.add_argument("--access-log", action="store_true",
                        help="also run cspd with --access-log and nginx with access_log ... buffer=64k, to measure "
                             "what logging costs each (as 'cspd+log' and 'nginx+log')")
    parser.add_argument("--sandbox-cost", action="store_true",
                        help="also run cspd with --no-sandbox (as 'cspd-nosandbox'), to measure what the sandbox "
                             "(file rules and call filter) costs a request")
    parser.add_argument("--baseline", default=None, metavar="CSPD[:HANDLERS]",
                        help="another cspd binary (an earlier build) measured as the peer 'cspd-before', with "
                             "the hello.so and xpng.so built with it (default: the same as --handlers)")
    args = parser.parse_args()
    args.cspd, args.handlers, args.out = args.cspd.resolve(), args.handlers.resolve(), args.out.resolve()

    # Inherited by servers and clients; a container may cap the hard limit (20,000 seen here).
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    work = work_folder("cspd-bench-")
    handlers = work / "handlers"
    handlers.mkdir()
    for name in ("hello.so", "xpng.so"):
        shutil.copy(args.handlers / name, handlers / name)

    servers = [Cspd(BASE_PORT, work, args.cspd, handlers), Nginx(BASE_PORT + 1, work), H2o(BASE_PORT + 2, work),
               Lighttpd(BASE_PORT + 3, work), Php(BASE_PORT + 4, work)]
    if args.baseline:
        binary, _, own_handlers = args.baseline.partition(":")
        before = work / "handlers-before"
        before.mkdir()
        for name in ("hello.so", "xpng.so"):
            shutil.copy(Path(own_handlers or args.handlers) / name, before / name)
        servers.append(Cspd(BASE_PORT + 5, work, Path(binary).resolve(), before, name="cspd-before"))
    if args.access_log:
        servers.append(Cspd(BASE_PORT + 8, work, args.cspd, handlers, name="cspd+log",
                            extra=("--access-log", str(work / "cspd-access.log"))))
        servers.append(Nginx(BASE_PORT + 9, work, access_log=True))
    if args.sandbox_cost:
        servers.append(Cspd(BASE_PORT + 10, work, args.cspd, handlers, name="cspd-nosandbox", extra=("--no-sandbox",)))
    if args.ceilings:
        for i, (name, (binary, description)) in enumerate(CEILINGS.items()):
            if (args.ceilings / binary).exists():
                servers.append(Ceiling(name, BASE_PORT + 6 + i, work, (args.ceilings / binary).resolve(), description))
    if args.only:
        wanted = set(args.only.split(","))
        servers = [s for s in servers if s.name in wanted or s.name == "cspd"]
    modes = [m for m in MODES if m in args.modes.split(",")]
    raw = {m: {e: {s.name: [] for s in servers} for e in ENDPOINTS} for m in modes}
    report = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
              "runs": args.runs, "seconds": args.seconds, "descriptions": {s.name: s.description for s in servers}}
    report["machine"], report["machine_short"] = machine_description()
    try:
        for s in servers:
            s.start()
        for run in range(args.runs):
            order = servers[run % len(servers):] + servers[:run % len(servers)]  # rotate who goes first
            for mode in modes:
                for endpoint in ENDPOINTS:
                    for s in order:
                        if mode == "ab":
                            result = run_ab(s, endpoint)
                        else:
                            run_wrk(s, endpoint, mode, 1)  # warm-up
                            result = run_wrk(s, endpoint, mode, args.seconds)
                        raw[mode][endpoint][s.name].append(result)
                        print(f"run {run + 1}/{args.runs} {mode:9} {endpoint:5} {s.name:9} "
                              f"{result['rps']:>12,.0f} req/s  {result['cpu_us_per_req'] or 0:7.2f} µs/req  "
                              f"errors {result['errors']}", flush=True)
        report["rows"] = summarize(raw, [s.name for s in servers], modes)
        if args.access_log:
            report["access_log_cost"] = access_log_cost(report["rows"])
            print(f"access log cost (CPU per request, with / without): {report['access_log_cost']}", flush=True)
        if args.idle_connections:
            report["idle_connections"] = args.idle_connections
            report["idle"] = {}
            for s in servers:
                if s.name == "php -S" or s.name in CEILINGS:
                    continue  # one request at a time: it cannot hold thousands of connections; a ceiling is no server
                report["idle"][s.name] = idle_connection_rss(s, args.idle_connections)
                print(f"idle {s.name}: {report['idle'][s.name]}", flush=True)
        report["reload"] = reload_under_load(servers[0], args.seconds)
        print(f"reload: {report['reload']}", flush=True)
    finally:
        for s in servers:
            s.stop()
    report["raw"] = raw
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "results.json").write_text(json.dumps(report, indent=1))
    (args.out / "results.md").write_text(markdown(report))
    chart(report, args.out)
    print((args.out / "results.md").read_text())
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
