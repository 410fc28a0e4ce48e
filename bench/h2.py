#!/usr/bin/env python3
"""HTTP/2 side by side: cspd against nginx and h2o, with h2load (nghttp2-client).

Each server gets one worker / one event loop pinned to CPU 0 (cspd's master and key process too,
and their CPU counts); h2load runs pinned to CPU 1; loopback only. For each transport (h2 over
TLS with the same ECDSA P-256 certificate, h2c with prior knowledge), each endpoint (/csp/hello,
/csp/xpng) and each depth (-m 1 and -m 32 streams per connection, 16 connections), servers
alternating within each round: req/s and server CPU per request; medians over the rounds. Then
the bytes an idle h2c connection costs each server: --idle-connections clients each ask for
/csp/hello once and stay open; the server's RSS growth divided by them.

    python3 bench/h2.py [--cspd build/cspd] [--handlers build/handlers] [--seconds 5] [--rounds 3]
                        [--only cspd,nginx,h2o] [--idle-connections 2000] [--out bench/results]
                        [--baseline OTHER_CSPD[:ITS_HANDLERS]]   (an earlier build, same rounds)
"""
import argparse
import json
import re
import shutil
import statistics
import struct
import subprocess
from pathlib import Path

import bench
import tls
from harness import ROOT, wait_for_port, work_folder

SERVER_CPU, CLIENT_CPU = bench.SERVER_CPU, bench.CLIENT_CPU
HELLO = bench.HELLO
TRANSPORTS = ["tls", "h2c"]
DEPTHS = [1, 32]


class Server(bench.Server):
    """A peer with an HTTPS port (`port`) and an h2c port (`port + 100`)."""

    def __init__(self, name, port, work):
        super().__init__(name, port, work, name)

    def url(self, transport, path):
        return f"https://127.0.0.1:{self.port}{path}" if transport == "tls" else f"http://127.0.0.1:{self.port + 100}{path}"

    def start(self):
        log = open(self.work / "server.log", "wb")
        self.proc = subprocess.Popen(["taskset", "-c", SERVER_CPU] + self.command(), stdout=log, stderr=log,
                                     cwd=self.work, start_new_session=True)
        wait_for_port(self.port)
        wait_for_port(self.port + 100)
        for transport in TRANSPORTS:
            out = subprocess.run(["curl", "-sk", "--http2" if transport == "tls" else "--http2-prior-knowledge",
                                  "-w", " %{http_version}", self.url(transport, "/csp/hello")],
                                 capture_output=True, text=True).stdout
            if out != HELLO + " 2":
                raise RuntimeError(f"{self.name} answers /csp/hello over {transport} with {out[:80]!r}; see {self.work}")


class Cspd(Server):
    def __init__(self, port, work, binary, handlers, certs, name="cspd"):
        super().__init__(name, port, work)
        self.binary, self.handlers, self.certs = binary, handlers, certs

    def command(self):
        return [str(self.binary), "--port", str(self.port + 100), "--bind", "127.0.0.1", "--tls-port", str(self.port),
                "--certs", str(self.certs), "--workers", "1", "--threads", "1", "--handlers", str(self.handlers),
                "--log-level", "warn", "--keepalive-timeout", "120"]


class Nginx(Server):
    def __init__(self, port, work, key, crt, www):
        super().__init__("nginx", port, work)
        (self.work / "nginx.conf").write_text(f"""
worker_processes 1;
daemon off;
master_process off;
error_log {self.work}/error.log warn;
pid {self.work}/nginx.pid;
events {{ worker_connections 4096; }}
http {{
  access_log off;
  keepalive_requests 100000000;
  keepalive_timeout 120s;
  http2_max_requests 100000000;
  http2_max_concurrent_streams 128;
  open_file_cache max=100;
  client_body_temp_path {self.work}; proxy_temp_path {self.work}; fastcgi_temp_path {self.work};
  uwsgi_temp_path {self.work}; scgi_temp_path {self.work};
  ssl_protocols TLSv1.2 TLSv1.3;
  server {{
    listen 127.0.0.1:{port} ssl http2 reuseport backlog=4096;
    listen 127.0.0.1:{port + 100} http2 reuseport backlog=4096;
    ssl_certificate {crt};
    ssl_certificate_key {key};
    root {www};
    location = /csp/hello {{ default_type text/html; return 200 "{HELLO}"; }}
    location = /csp/xpng {{ default_type image/png; try_files /csp/xpng.png =404; }}
  }}
}}
""")

    def command(self):
        return ["nginx", "-c", str(self.work / "nginx.conf"), "-e", str(self.work / "error.log")]


class H2o(Server):
    def __init__(self, port, work, key, crt, www):
        super().__init__("h2o", port, work)
        (self.work / "h2o.conf").write_text(f"""
num-threads: 1
user: root
error-log: {self.work}/error.log
pid-file: {self.work}/h2o.pid
http2-idle-timeout: 120
listen:
  host: 127.0.0.1
  port: {port}
  ssl:
    certificate-file: {crt}
    key-file: {key}
    minimum-version: TLSv1.2
listen:
  host: 127.0.0.1
  port: {port + 100}
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


def h2load(server, transport, path, depth, seconds):
    before = server.cpu_ns()
    cmd = ["taskset", "-c", CLIENT_CPU, "h2load", "-c16", f"-m{depth}", "-t1", f"-D{seconds}",
           server.url(transport, path)]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds + 60).stdout
    cpu = server.cpu_ns() - before
    m = re.search(r"requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, (\d+) failed, (\d+) errored",
                  out)
    done = int(m.group(4)) if m else 0
    failed = (int(m.group(5)) + int(m.group(6))) if m else -1
    rate = re.search(r"finished in [\d.]+\w+, ([\d.]+) req/s", out)
    return {"per_s": float(rate.group(1)) if rate else 0.0, "cpu_us": cpu / 1000 / done if done else None,
            "count": done, "failed": failed}


def h2c_hello_request():
    """The client's preface, an empty SETTINGS and GET /csp/hello on stream 1, in HPACK without
    indexing (no encoder needed): one write."""
    def literal(index, value):
        return bytes([index]) + bytes([len(value)]) + value  # literal, not indexed; short values only
    block = bytes([0x82, 0x86]) + literal(0x04, b"/csp/hello") + literal(0x01, b"localhost")  # GET, http
    headers = struct.pack(">I", len(block))[1:] + bytes([0x1, 0x5]) + struct.pack(">I", 1) + block
    return b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00" + headers


def answered_h2c(received):
    """Whether `received` holds stream 1's END_STREAM (HEADERS or DATA), frame by frame."""
    at = 0
    while at + 9 <= len(received):
        length = int.from_bytes(received[at:at + 3], "big")
        kind, flags, stream = received[at + 3], received[at + 4], int.from_bytes(received[at + 5:at + 9], "big")
        if at + 9 + length > len(received):
            return False
        if stream == 1 and kind in (0x0, 0x1) and flags & 0x1:
            return True
        at += 9 + length
    return False


def idle_h2c_rss(server, count):
    """RSS growth per idle h2c connection: `count` clients each ask for /csp/hello once, then idle
    (the server's SETTINGS acknowledged, as a browser does)."""
    return bench.idle_connection_rss(server, count, port=server.port + 100, request=h2c_hello_request(),
                                     answered_by=answered_h2c, then=b"\x00\x00\x00\x04\x01\x00\x00\x00\x00")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cspd", type=Path, default=ROOT / "build" / "cspd")
    parser.add_argument("--handlers", type=Path, default=ROOT / "build" / "handlers")
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--only", default="cspd,nginx,h2o")
    parser.add_argument("--idle-connections", type=int, default=2000)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    parser.add_argument("--baseline", default=None, metavar="CSPD[:HANDLERS]",
                        help="an earlier cspd (and its handlers) measured beside this one, same rounds")
    args = parser.parse_args()

    work = work_folder("cspd-h2-bench-")
    key, crt, certs = tls.make_certificate(work)
    www = bench.static_tree(work)
    wanted = args.only.split(",")
    servers = [s for s in [Cspd(18950, work, args.cspd.resolve(), args.handlers.resolve(), certs),
                           Nginx(18951, work, key, crt, www), H2o(18952, work, key, crt, www)] if s.name in wanted]
    if args.baseline:
        binary, _, own_handlers = args.baseline.partition(":")
        before = work / "handlers-before"  # a folder of its own: each server watches its own
        before.mkdir()
        for name in ("hello.so", "xpng.so"):
            shutil.copy(Path(own_handlers or args.handlers) / name, before / name)
        servers.append(Cspd(18953, work, Path(binary).resolve(), before, certs, name="cspd-before"))
    cases = [(t, p, d) for t in TRANSPORTS for p in ("/csp/hello", "/csp/xpng") for d in DEPTHS]
    raw = {s.name: {f"{t} {p} -m{d}": [] for t, p, d in cases} for s in servers}
    try:
        for server in servers:
            server.start()
        for round_ in range(args.rounds):
            for transport, path, depth in cases:
                for server in servers:
                    result = h2load(server, transport, path, depth, args.seconds)
                    raw[server.name][f"{transport} {path} -m{depth}"].append(result)
                    print(f"round {round_ + 1} {server.name:6} {transport:4} {path:11} -m{depth:<3} "
                          f"{result['per_s']:10.0f} req/s  {result['cpu_us'] or 0:6.2f} µs CPU each"
                          f"{'' if result['failed'] == 0 else '  FAILED ' + str(result['failed'])}", flush=True)
        idle = {}
        for server in servers if args.idle_connections else []:
            idle[server.name] = idle_h2c_rss(server, args.idle_connections)
            print(f"idle h2c {server.name:6} {idle[server.name]['bytes_per_connection']:8.0f} B/connection "
                  f"({idle[server.name]['answered']} answered)", flush=True)
    finally:
        for server in servers:
            server.stop()

    def median(name, case, key):
        values = [r[key] for r in raw[name][case] if r.get(key) is not None]
        return statistics.median(values) if values else None

    names = [s.name for s in servers]
    lines = ["| case | " + " | ".join(f"{n} req/s | {n} CPU µs/req" for n in names) + " |",
             "|---" * (1 + 2 * len(names)) + "|"]
    if not args.rounds:  # --rounds 0: the idle measurement alone
        cases, lines = [], []
    for transport, path, depth in cases:
        case = f"{transport} {path} -m{depth}"
        cells = []
        for n in names:
            cells += [f"{median(n, case, 'per_s'):,.0f}", f"{median(n, case, 'cpu_us'):.2f}"]
        lines.append(f"| {case} | " + " | ".join(cells) + " |")
    if "cspd" in names and len(names) > 1 and cases:
        lines.append("")
        for transport, path, depth in cases:
            case = f"{transport} {path} -m{depth}"
            leanest = min((n for n in names if n != "cspd"), key=lambda n: median(n, case, "cpu_us"))
            lines.append(f"- {case}: cspd CPU/request {median('cspd', case, 'cpu_us') / median(leanest, case, 'cpu_us'):.2f}× "
                         f"the leanest peer's ({leanest})")
    if idle:
        lines += ["", f"Idle h2c connections ({args.idle_connections:,} open, one GET each): server RSS growth per connection", ""]
        lines += [f"- {n}: {v['bytes_per_connection']:,.0f} B ({v['answered']} answered)" for n, v in idle.items()]
    report = "\n".join(lines)
    print(report)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "h2.json").write_text(json.dumps({"raw": raw, "idle": idle, "seconds": args.seconds, "rounds": args.rounds},
                                                 indent=1))
    (args.out / "h2.md").write_text(report + "\n")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
