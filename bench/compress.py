#!/usr/bin/env python3
"""Dynamic compression: cspd against nginx (gzip on, gzip_comp_level 1), side by side in one run.

The documents: 16 KiB of JSON and 100 KiB of HTML. nginx serves them as files with gzip on (it
compresses them on every request); cspd answers them from a handler (bench/handlers/document.c,
which copies them into its reply), so it compresses them on every request too. Both servers get
one worker and one event loop on CPU 0; wrk runs on CPU 1, -t1 -c32, alternating rounds, medians.
Measured for each case: requests/s, the server's CPU per answer (its processes' schedstat), and
the compressed size (one GET). Then:
  - the reply cache: a compressed hit against an uncompressed hit (goal: >= 0.9x the req/s);
  - hello (below --compress-min-size) sent Accept-Encoding, against a cspd with --no-compress
    (goal: no more CPU per answer).
Loopback only; bounded by wrk's durations; stops what it started.

    python3 bench/compress.py [--build build] [--seconds 4] [--rounds 3] [--out bench/results]
"""
import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import urllib.request
from pathlib import Path

from harness import ROOT, build_handler, wait_for_port, work_folder
from bench import Server

CSPD_PORT, NGINX_PORT, PLAIN_PORT = 18898, 18899, 18900


def write_documents(folder):
    """16 KiB of JSON rows and 100 KiB of an HTML table, the same bytes every run."""
    rng = random.Random(42)
    words = ["alpha", "beta", "gamma", "delta", "order", "paid", "shipped", "north", "south", "widget", "gadget"]
    rows = []
    while len(json.dumps(rows)) < 16 * 1024:
        i = len(rows)
        rows.append({"id": i, "name": f"{rng.choice(words)} {rng.choice(words)}", "price": round(rng.random() * 100, 2),
                     "status": rng.choice(words), "tags": rng.sample(words, 3), "created": f"2026-11-{1 + i % 28:02d}"})
    text = json.dumps(rows)[: 16 * 1024 - 1]
    text = text[: text.rfind("},") + 1] + "]"
    (folder / "doc.json").write_text(text)
    html = ["<!doctype html><html><head><title>Orders</title><link rel=stylesheet href=/site.css></head><body>",
            "<table class=orders><thead><tr><th>#</th><th>Customer</th><th>Item</th><th>Total</th></tr></thead><tbody>"]
    while sum(len(part) for part in html) < 100 * 1024 - 200:
        i = len(html)
        html.append(f"<tr class=\"row {rng.choice(words)}\"><td>{i}</td><td>{rng.choice(words).title()} "
                    f"{rng.choice(words).title()}</td><td>{rng.choice(words)}</td><td>{rng.random() * 500:.2f}</td></tr>\n")
    html.append("</tbody></table></body></html>\n")
    (folder / "doc.html").write_text("".join(html))


def nginx_conf(work, www):
    return f"""
worker_processes 1;
daemon off;
master_process off;
error_log {work}/error.log warn;
pid {work}/nginx.pid;
events {{ worker_connections 4096; }}
http {{
  include /etc/nginx/mime.types;
  access_log off;
  keepalive_requests 100000000;
  open_file_cache max=1000 inactive=60s;
  gzip on;
  gzip_comp_level 1;
  gzip_min_length 512;
  gzip_types application/json text/html;
  gzip_vary on;
  client_body_temp_path {work}; proxy_temp_path {work}; fastcgi_temp_path {work};
  uwsgi_temp_path {work}; scgi_temp_path {work};
  server {{
    listen 127.0.0.1:{NGINX_PORT} reuseport backlog=4096;
    root {www};
  }}
}}
"""


class Process(Server):
    """A server by its command line (bench.Server's CPU accounting, pinned to CPU 0)."""

    def __init__(self, name, port, work, argv):
        super().__init__(name, port, work, name)
        self.argv = argv

    def command(self):
        return self.argv

    def start(self):
        log = open(self.work / "server.log", "wb")
        self.proc = subprocess.Popen(["taskset", "-c", "0"] + self.argv, stdout=log, stderr=log, cwd=self.work,
                                     start_new_session=True)
        wait_for_port(self.port)


def fetch(url, coding):
    request = urllib.request.Request(url, headers={"Accept-Encoding": coding} if coding else {})
    with urllib.request.urlopen(request, timeout=5) as answer:
        return answer.headers.get("Content-Encoding") or "", answer.read()


def run_wrk(server, url, coding, seconds):
    header = ["-H", f"Accept-Encoding: {coding}"] if coding else []
    before = server.cpu_ns()
    out = subprocess.run(["taskset", "-c", "1", "wrk", "-t1", "-c32", f"-d{seconds}s", *header, url],
                         capture_output=True, text=True, check=True).stdout
    cpu = server.cpu_ns() - before
    requests = int(out.split(" requests in")[0].split()[-1])
    if "Non-2xx" in out:
        raise RuntimeError(f"{url}: non-2xx answers\n{out}")
    return {"rps": float(out.split("Requests/sec:")[1].split()[0]), "cpu_us": cpu / 1000 / max(requests, 1)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", type=Path, default=ROOT / "build", help="a build folder with cspd")
    parser.add_argument("--seconds", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", type=Path, help="a folder for compress.json and compress.md")
    args = parser.parse_args()

    work = work_folder("cspd-compress-bench-")
    www, handlers = work / "www", work / "handlers"
    www.mkdir()
    handlers.mkdir()
    write_documents(www)
    build_handler(ROOT / "bench/handlers/document.c", handlers / "document.so", [f'-DDOC_DIR="{www}"'])
    shutil.copy(args.build / "handlers/hello.so", handlers / "hello.so")
    (work / "nginx.conf").write_text(nginx_conf(work, www))
    cspd = str((args.build / "cspd").resolve())
    common = ["--bind", "127.0.0.1", "--workers", "1", "--threads", "1", "--handlers", str(handlers), "--www", str(www),
              "--log-level", "warn"]
    servers = {"cspd": Process("cspd", CSPD_PORT, work, [cspd, "--port", str(CSPD_PORT), *common]),
               "cspd --no-compress": Process("cspd-plain", PLAIN_PORT, work,
                                             [cspd, "--port", str(PLAIN_PORT), "--no-compress", *common]),
               "nginx": Process("nginx", NGINX_PORT, work,
                                ["nginx", "-c", str(work / "nginx.conf"), "-e", str(work / "error.log")])}
    c, n, p = (f"http://127.0.0.1:{port}" for port in (CSPD_PORT, NGINX_PORT, PLAIN_PORT))
    # (label, server, url, Accept-Encoding)
    cases = []
    for doc, size in (("json", "16 KiB JSON"), ("html", "100 KiB HTML")):
        cases += [(f"{size}, nginx gzip 1", "nginx", f"{n}/doc.{doc}", "gzip"),
                  (f"{size}, cspd gzip", "cspd", f"{c}/csp/document?doc={doc}", "gzip"),
                  (f"{size}, cspd zstd", "cspd", f"{c}/csp/document?doc={doc}", "zstd"),
                  (f"{size}, cspd br", "cspd", f"{c}/csp/document?doc={doc}", "br"),
                  (f"{size}, cspd identity", "cspd", f"{c}/csp/document?doc={doc}", "")]
    cases += [("16 KiB JSON, cspd reply cache hit, identity", "cspd", f"{c}/csp/document?doc=json&cache=1", ""),
              ("16 KiB JSON, cspd reply cache hit, zstd", "cspd", f"{c}/csp/document?doc=json&cache=1", "zstd"),
              ("16 KiB JSON, cspd reply cache hit, gzip", "cspd", f"{c}/csp/document?doc=json&cache=1", "gzip"),
              ("hello (20 B), cspd", "cspd", f"{c}/csp/hello", "gzip, br, zstd"),
              ("hello (20 B), cspd --no-compress", "cspd --no-compress", f"{p}/csp/hello", "gzip, br, zstd")]
    runs = {label: [] for label, *_ in cases}
    sizes = {}
    try:
        for server in servers.values():
            server.start()
        for label, name, url, coding in cases:
            sent, body = fetch(url, coding)
            if coding and name != "cspd --no-compress" and "hello" not in label and sent != coding.split(",")[0]:
                raise RuntimeError(f"{label}: sent {sent!r}, not {coding}")
            sizes[label] = len(body)
        for _ in range(args.rounds):
            for label, name, url, coding in cases:
                runs[label].append(run_wrk(servers[name], url, coding, args.seconds))
    finally:
        for server in servers.values():
            server.stop()
        shutil.rmtree(work, ignore_errors=True)

    report = {label: {"rps": statistics.median(r["rps"] for r in runs[label]),
                      "cpu_us": statistics.median(r["cpu_us"] for r in runs[label]),
                      "bytes": sizes[label], "rounds": runs[label]} for label, *_ in cases}
    lines = [f"wrk -t1 -c32 -d{args.seconds}s on CPU 1; each server one worker, one event loop, on CPU 0; "
             f"{args.rounds} alternating rounds, medians; {os.cpu_count()} CPUs shared by both\n",
             "| case | req/s | CPU µs/answer | bytes sent |", "|---|---:|---:|---:|"]
    for label, *_ in cases:
        r = report[label]
        lines.append(f"| {label} | {r['rps']:,.0f} | {r['cpu_us']:.1f} | {r['bytes']:,} |")
    lines.append("")
    for doc in ("16 KiB JSON", "100 KiB HTML"):
        nginx = report[f"{doc}, nginx gzip 1"]
        for coding in ("gzip", "zstd", "br"):
            ours = report[f"{doc}, cspd {coding}"]
            lines.append(f"- {doc}, cspd {coding} against nginx gzip 1: CPU {ours['cpu_us'] / nginx['cpu_us']:.2f}x, "
                         f"size {ours['bytes'] / nginx['bytes']:.2f}x")
    hit, zhit = report["16 KiB JSON, cspd reply cache hit, identity"], report["16 KiB JSON, cspd reply cache hit, zstd"]
    lines.append(f"- reply cache: a zstd hit at {zhit['rps'] / hit['rps']:.2f}x the identity hit's req/s (goal >= 0.9)")
    small, plain = report["hello (20 B), cspd"], report["hello (20 B), cspd --no-compress"]
    lines.append(f"- hello below the minimum size: {small['cpu_us'] / plain['cpu_us']:.2f}x the CPU per answer of "
                 f"--no-compress (goal <= 1, within noise)")
    text = "\n".join(lines)
    print(text)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "compress.json").write_text(json.dumps(report, indent=1) + "\n")
        (args.out / "compress.md").write_text("# bench/compress.py\n\n" + text + "\n")


if __name__ == "__main__":
    main()
