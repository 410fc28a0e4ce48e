#!/usr/bin/env python3
"""HTTPS side by side: cspd against nginx and h2o, the same ECDSA P-256 certificate and the same
OpenSSL, session tickets on everywhere.

Each server gets one worker / one event loop pinned to CPU 0 (cspd's key process and master are
pinned there too, and their CPU counts); the clients run pinned to CPU 1; loopback only. Measured,
alternating servers within each round, medians over the rounds:

  full      full TLS 1.3 handshakes, one request each (openssl s_time -new): handshakes/s and
            server CPU per handshake (cspd's includes the hop to its key process);
  resumed   the same, resuming a ticket (openssl s_time -reuse);
  keepalive HTTPS keep-alive, wrk -t1 -c64: req/s and server CPU per request;
  pipelined HTTPS with 16 requests per write (wrk + pipeline.lua): the same.

    python3 bench/tls.py [--cspd build/cspd] [--handlers build/handlers] [--seconds 5] [--rounds 3]
                         [--only cspd,nginx,h2o] [--out bench/results]
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import tempfile
from pathlib import Path

import bench
from harness import ROOT, wait_for_port, work_folder

SERVER_CPU, CLIENT_CPU = bench.SERVER_CPU, bench.CLIENT_CPU
HELLO = bench.HELLO
MODES = ["full", "resumed", "keepalive", "pipelined"]


def make_certificate(work):
    """One ECDSA P-256 certificate for localhost: key and chain in one file, and apart."""
    key, crt = work / "key.pem", work / "cert.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                    "-keyout", str(key), "-out", str(crt), "-days", "30", "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"], check=True, capture_output=True)
    certs = work / "certs"
    certs.mkdir()
    (certs / "default.pem").write_bytes(key.read_bytes() + crt.read_bytes())
    os.chmod(certs / "default.pem", 0o600)
    return key, crt, certs


class Server(bench.Server):
    """A peer over TLS: bench.py's Server (start pinned, CPU time, stop), checked over HTTPS."""

    def __init__(self, name, port, work):
        super().__init__(name, port, work, name)

    def start(self):
        log = open(self.work / "server.log", "wb")
        self.proc = subprocess.Popen(["taskset", "-c", SERVER_CPU] + self.command(), stdout=log, stderr=log,
                                     cwd=self.work, start_new_session=True)
        wait_for_port(self.port)
        out = subprocess.run(["curl", "-sk", f"https://127.0.0.1:{self.port}/csp/hello"], capture_output=True,
                             text=True).stdout
        if out != HELLO:
            raise RuntimeError(f"{self.name} answers /csp/hello over TLS with {out[:80]!r}; see {self.work}")


class Cspd(Server):
    def __init__(self, port, work, binary, handlers, certs):
        super().__init__("cspd", port, work)
        self.binary, self.handlers, self.certs = binary, handlers, certs

    def command(self):
        return [str(self.binary), "--port", str(self.port + 100), "--bind", "127.0.0.1", "--tls-port", str(self.port),
                "--certs", str(self.certs), "--workers", "1", "--threads", "1", "--handlers", str(self.handlers),
                "--log-level", "warn", "--keepalive-timeout", "120"]


class Nginx(Server):
    def __init__(self, port, work, key, crt):
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
  client_body_temp_path {self.work}; proxy_temp_path {self.work}; fastcgi_temp_path {self.work};
  uwsgi_temp_path {self.work}; scgi_temp_path {self.work};
  ssl_protocols TLSv1.2 TLSv1.3;
  ssl_session_tickets on;
  ssl_session_timeout 2h;
  server {{
    listen 127.0.0.1:{port} ssl reuseport backlog=4096 deferred;
    ssl_certificate {crt};
    ssl_certificate_key {key};
    location = /csp/hello {{ default_type text/html; return 200 "{HELLO}"; }}
  }}
}}
""")

    def command(self):
        return ["nginx", "-c", str(self.work / "nginx.conf"), "-e", str(self.work / "error.log")]


class H2o(Server):
    def __init__(self, port, work, key, crt):
        super().__init__("h2o", port, work)
        www = self.work / "www" / "csp"
        www.mkdir(parents=True, exist_ok=True)
        (www / "hello.html").write_text(HELLO)
        (self.work / "h2o.conf").write_text(f"""
num-threads: 1
user: root
error-log: {self.work}/error.log
pid-file: {self.work}/h2o.pid
http1-request-timeout: 120
listen:
  host: 127.0.0.1
  port: {port}
  ssl:
    certificate-file: {crt}
    key-file: {key}
    minimum-version: TLSv1.2
hosts:
  default:
    paths:
      /csp/hello:
        file.file: {www}/hello.html
""")

    def command(self):
        return ["h2o", "-c", str(self.work / "h2o.conf")]


def s_time(server, mode, seconds):
    """Sequential TLS 1.3 connections, one GET each: new handshakes, or resumed ones."""
    flag = "-new" if mode == "full" else "-reuse"
    before, keys_before = server.cpu_ns(), server.cpu_ns("__keys")
    out = subprocess.run(["taskset", "-c", CLIENT_CPU, "openssl", "s_time", "-connect", f"127.0.0.1:{server.port}",
                          flag, "-time", str(seconds), "-www", "/csp/hello"],
                         capture_output=True, text=True, timeout=seconds + 30).stdout
    cpu, keys_cpu = server.cpu_ns() - before, server.cpu_ns("__keys") - keys_before
    m = re.search(r"(\d+) connections in (\d+) real seconds", out)
    count = int(m.group(1)) if m else 0
    return {"per_s": count / seconds, "cpu_us": cpu / 1000 / count if count else None, "count": count,
            "key_process_cpu_us": keys_cpu / 1000 / count if count else None}


def wrk(server, mode, seconds):
    cmd = ["taskset", "-c", CLIENT_CPU, "wrk", "-t1", "-c64", f"-d{seconds}s", "--timeout", "2s"]
    env = dict(os.environ)
    if mode == "pipelined":
        cmd += ["-s", str(ROOT / "bench" / "pipeline.lua")]
        env["PIPELINE_DEPTH"] = "16"
    before = server.cpu_ns()
    out = subprocess.run(cmd + [f"https://127.0.0.1:{server.port}/csp/hello"], capture_output=True, text=True,
                         env=env, timeout=seconds + 30).stdout
    cpu = server.cpu_ns() - before
    requests = int(re.search(r"(\d+) requests in", out).group(1))
    errors = sum(int(n) for n in re.findall(r"(?:connect|read|write|timeout) (\d+)", out))
    bad = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    return {"per_s": float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1)),
            "cpu_us": cpu / 1000 / requests if requests else None, "count": requests,
            "errors": errors + (int(bad.group(1)) if bad else 0)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cspd", type=Path, default=ROOT / "build" / "cspd")
    parser.add_argument("--handlers", type=Path, default=ROOT / "build" / "handlers")
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--only", default="cspd,nginx,h2o")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    args = parser.parse_args()

    work = work_folder("cspd-tls-bench-")
    key, crt, certs = make_certificate(work)
    wanted = args.only.split(",")
    servers = [s for s in [Cspd(18940, work, args.cspd.resolve(), args.handlers.resolve(), certs),
                           Nginx(18941, work, key, crt), H2o(18942, work, key, crt)] if s.name in wanted]
    raw = {s.name: {m: [] for m in MODES} for s in servers}
    try:
        for server in servers:
            server.start()
        for round_ in range(args.rounds):
            for server in servers:
                for mode in MODES:
                    result = s_time(server, mode, args.seconds) if mode in ("full", "resumed") else \
                        wrk(server, mode, args.seconds)
                    raw[server.name][mode].append(result)
                    print(f"round {round_ + 1} {server.name:6} {mode:9} {result['per_s']:10.0f}/s  "
                          f"{result['cpu_us'] or 0:7.2f} µs CPU each", flush=True)
    finally:
        for server in servers:
            server.stop()

    def median(name, mode, key):
        values = [r[key] for r in raw[name][mode] if r.get(key) is not None]
        return statistics.median(values) if values else None

    lines = ["| server | full handshakes/s | CPU µs/full | resumed/s | CPU µs/resumed | keep-alive req/s | "
             "CPU µs/req | pipelined req/s | CPU µs/req (pipelined) |", "|---" * 9 + "|"]
    for s in servers:
        cells = []
        for mode in MODES:
            cells += [f"{median(s.name, mode, 'per_s'):,.0f}", f"{median(s.name, mode, 'cpu_us'):.2f}"]
        lines.append(f"| {s.name} | " + " | ".join(cells) + " |")
    if "cspd" in raw and len(servers) > 1:
        lines.append("")
        for s in servers:
            if s.name == "cspd":
                continue
            ratios = []
            for mode in MODES:
                ratios.append(f"{mode}: CPU {median('cspd', mode, 'cpu_us') / median(s.name, mode, 'cpu_us'):.2f}×, "
                              f"rate {median('cspd', mode, 'per_s') / median(s.name, mode, 'per_s'):.2f}×")
            lines.append(f"- cspd / {s.name}: " + "; ".join(ratios))
    if "cspd" in raw:
        lines.append(f"- cspd's key process: {median('cspd', 'full', 'key_process_cpu_us'):.2f} µs CPU per full handshake "
                     f"(its share of cspd's CPU/full above), {median('cspd', 'resumed', 'key_process_cpu_us'):.2f} "
                     "per resumed one")
    report = "\n".join(lines)
    print(report)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "tls.json").write_text(json.dumps({"raw": raw, "seconds": args.seconds, "rounds": args.rounds,
                                                   "openssl": subprocess.run(["openssl", "version"], capture_output=True,
                                                                             text=True).stdout.strip()}, indent=1))
    (args.out / "tls.md").write_text(report + "\n")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
