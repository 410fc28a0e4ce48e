#!/usr/bin/env python3
"""Static files: cspd serving a one-pixel PNG (and a 20 KiB CSS file) from its www folder, against
nginx serving the same files with open_file_cache, side by side in one run.

Both servers get one worker and one event loop pinned to CPU 0; wrk runs pinned to CPU 1, -t1
-c32, alternating rounds, medians. Loopback only; bounded by wrk's durations; stops what it started.
Prints a markdown table with the ratios.

    python3 bench/static.py [--build build] [--seconds 5] [--rounds 3]
"""
import argparse
import base64
import os
import shutil
import statistics
import subprocess
import tempfile
import urllib.request
from pathlib import Path

from harness import ROOT, wait_for_port, wrk, work_folder

PIXEL = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVQImWP4////fwAJ+wP9CNHoHgAAAABJRU5ErkJggg==")
CSPD_PORT, NGINX_PORT = 18896, 18897


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
  open_file_cache_valid 60s;
  etag on;
  client_body_temp_path {work}; proxy_temp_path {work}; fastcgi_temp_path {work};
  uwsgi_temp_path {work}; scgi_temp_path {work};
  server {{
    listen 127.0.0.1:{NGINX_PORT} reuseport backlog=4096;
    root {www};
  }}
}}
"""


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", type=Path, default=ROOT / "build", help="a build folder with cspd")
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    work = work_folder("cspd-static-bench-")
    www, handlers = work / "www", work / "handlers"
    www.mkdir()
    handlers.mkdir()
    (www / "xpng.png").write_bytes(PIXEL)
    (www / "site.css").write_text("body { margin: 0 }\n" * 1078)  # about 20 KiB
    (work / "nginx.conf").write_text(nginx_conf(work, www))
    servers = {
        "cspd": subprocess.Popen(["taskset", "-c", "0", str((args.build / "cspd").resolve()), "--port", str(CSPD_PORT),
                                  "--bind", "127.0.0.1", "--workers", "1", "--threads", "1", "--handlers",
                                  str(handlers), "--www", str(www), "--log-level", "warn"]),
        "nginx": subprocess.Popen(["taskset", "-c", "0", "nginx", "-c", str(work / "nginx.conf"), "-e",
                                   str(work / "error.log")]),
    }
    ports = {"cspd": CSPD_PORT, "nginx": NGINX_PORT}
    files = ["xpng.png", "site.css"]
    runs = {(s, f): [] for s in servers for f in files}
    try:
        for name, port in ports.items():
            wait_for_port(port)
            for f in files:
                body = urllib.request.urlopen(f"http://127.0.0.1:{port}/{f}", timeout=5).read()
                if body != (www / f).read_bytes():
                    raise RuntimeError(f"{name} served {f} wrong")
        for _ in range(args.rounds):
            for f in files:
                for name, port in ports.items():
                    out = subprocess.run(["taskset", "-c", "1", "wrk", "-t1", "-c32", f"-d{args.seconds}s",
                                          f"http://127.0.0.1:{port}/{f}"], capture_output=True, text=True,
                                         check=True).stdout
                    runs[(name, f)].append(float(out.split("Requests/sec:")[1].split()[0]))
    finally:
        for proc in servers.values():
            proc.terminate()
            proc.wait(15)
        shutil.rmtree(work, ignore_errors=True)

    print(f"wrk -t1 -c32 -d{args.seconds}s pinned to CPU 1, servers pinned to CPU 0 (one worker, one loop each), "
          f"{args.rounds} alternating rounds, medians; {os.cpu_count()} CPUs\n")
    print("| file | cspd req/s | nginx req/s (open_file_cache) | cspd / nginx |")
    print("|---|---:|---:|---:|")
    for f in files:
        c, n = statistics.median(runs[("cspd", f)]), statistics.median(runs[("nginx", f)])
        print(f"| {f} | {c:,.0f} | {n:,.0f} | {c / n:.2f}x |")


if __name__ == "__main__":
    main()
