#!/usr/bin/env python3
"""Per-client limits (--client-rate): what they cost, and how exactly they hold, beside nginx.

1. Cost: hello over keep-alive, cspd with --client-rate set so high it never refuses against the
   same cspd without it. One worker, one event loop on CPU 0; wrk -t1 -c32 on CPU 1; alternating
   rounds; medians of the server's CPU per answer (its processes' schedstat), and the median of each
   round's ratio (the two runs of a round are seconds apart: the machine's drift, up to 2x within
   hours, cancels out of it). Goal: <= 1.03x.
2. Accuracy: one client (wrk -t1 -c8 on CPU 1) asking as fast as it can for SECONDS at 100
   requests a second with a burst of 20: cspd with 2 workers of 2 loops each (one table for all),
   and nginx's limit_req (rate=100r/s burst=20 nodelay, limit_req_status 429, one worker) serving a
   small file. Counted: the answers of 200 against what the bucket allows, 100 x SECONDS + the
   burst (nginx's burst is past the first request, so it allows one more), over the seconds wrk
   itself reports (a little more than asked).
Loopback only; bounded by wrk's durations; stops what it started.

    python3 bench/client_limits.py [--build build] [--cost-seconds 2] [--rounds 11] [--seconds 5] [--out bench/results]
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
from pathlib import Path

from harness import ROOT, wait_for_port, work_folder
from bench import Server

PLAIN_PORT, LIMITED_PORT, RATE_PORT, NGINX_PORT = 18910, 18911, 18912, 18913


class Process(Server):
    """A server by its command line (bench.Server's CPU accounting), pinned to CPU 0."""

    def __init__(self, name, port, work, argv, cpus="0"):
        super().__init__(name, port, work, name)
        self.argv = argv
        self.cpus = cpus

    def command(self):
        return self.argv

    def start(self):
        log = open(self.work / f"{self.name}.log", "wb")
        self.proc = subprocess.Popen(["taskset", "-c", self.cpus] + self.argv, stdout=log, stderr=log, cwd=self.work,
                                     start_new_session=True)
        wait_for_port(self.port)


def wrk(url, seconds, connections):
    out = subprocess.run(["taskset", "-c", "1", "wrk", "-t1", f"-c{connections}", f"-d{seconds}s", url],
                         capture_output=True, text=True, check=True).stdout
    found = re.search(r"(\d+) requests in ([\d.]+)(m?s)", out)
    requests = int(found.group(1))
    took_s = float(found.group(2)) / (1000 if found.group(3) == "ms" else 1)
    non_2xx = int(m.group(1)) if (m := re.search(r"Non-2xx or 3xx responses: (\d+)", out)) else 0
    errors = sum(int(x) for x in m.groups()) if (
        m := re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)) else 0
    rps = float(out.split("Requests/sec:")[1].split()[0])
    return requests, non_2xx, errors, rps, took_s


def cost_round(server, url, seconds):
    before = server.cpu_ns()
    requests, non_2xx, errors, rps, _ = wrk(url, seconds, 32)
    if non_2xx or errors:
        raise RuntimeError(f"{url}: {non_2xx} non-2xx answers, {errors} socket errors")
    return {"rps": rps, "cpu_us": (server.cpu_ns() - before) / 1000 / max(requests, 1)}


def nginx_conf(work, www):
    return f"""
worker_processes 1;
daemon off;
error_log {work}/nginx-error.log warn;
pid {work}/nginx.pid;
events {{ worker_connections 4096; }}
http {{
  access_log off;
  keepalive_requests 100000000;
  limit_req_zone $binary_remote_addr zone=clients:10m rate=100r/s;
  limit_req_status 429;
  client_body_temp_path {work}; proxy_temp_path {work}; fastcgi_temp_path {work};
  uwsgi_temp_path {work}; scgi_temp_path {work};
  server {{
    listen 127.0.0.1:{NGINX_PORT};
    root {www};
    location / {{ limit_req zone=clients burst=20 nodelay; }}
  }}
}}
"""


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", type=Path, default=ROOT / "build", help="a build folder with cspd")
    parser.add_argument("--seconds", type=int, default=5, help="of the accuracy runs")
    parser.add_argument("--cost-seconds", type=int, default=2, help="of each cost round: short rounds, many")
    parser.add_argument("--rounds", type=int, default=11)
    parser.add_argument("--out", type=Path, help="a folder for client_limits.json and client_limits.md")
    args = parser.parse_args()

    work = work_folder("cspd-client-limits-bench-")
    handlers, www = work / "handlers", work / "www"
    handlers.mkdir()
    www.mkdir()
    shutil.copy(args.build / "handlers/hello.so", handlers / "hello.so")
    (www / "hello.txt").write_text("hello\n")
    (work / "nginx.conf").write_text(nginx_conf(work, www))
    cspd = str((args.build / "cspd").resolve())
    one = ["--bind", "127.0.0.1", "--workers", "1", "--threads", "1", "--handlers", str(handlers), "--log-level", "warn"]
    servers = {
        "plain": Process("cspd", PLAIN_PORT, work, [cspd, "--port", str(PLAIN_PORT), *one]),
        "limited": Process("cspd-limited", LIMITED_PORT, work,
                           [cspd, "--port", str(LIMITED_PORT), "--client-rate", "1000000", "--client-burst", "1000000",
                            *one]),
    }
    cost = {name: [] for name in servers}
    try:
        for server in servers.values():
            server.start()
        for _ in range(args.rounds):
            for name, server in servers.items():
                cost[name].append(cost_round(server, f"http://127.0.0.1:{server.port}/csp/hello", args.cost_seconds))
    finally:
        for server in servers.values():
            server.stop()

    rate = {
        "cspd": Process("cspd-rate", RATE_PORT, work,
                        [cspd, "--port", str(RATE_PORT), "--bind", "127.0.0.1", "--workers", "2", "--threads", "2",
                         "--handlers", str(handlers), "--log-level", "warn", "--client-rate", "100",
                         "--client-burst", "20"], cpus="0"),
        "nginx": Process("nginx", NGINX_PORT, work, ["nginx", "-c", str(work / "nginx.conf"), "-e",
                                                     str(work / "nginx-error.log")], cpus="0"),
    }
    accuracy = {}
    try:
        for name, url, burst in (("cspd", f"http://127.0.0.1:{RATE_PORT}/csp/hello", 20),
                                 ("nginx", f"http://127.0.0.1:{NGINX_PORT}/hello.txt", 21)):
            rate[name].start()
            requests, non_2xx, errors, _, took_s = wrk(url, args.seconds, 8)
            rate[name].stop()
            allowed = 100 * took_s + burst
            accuracy[name] = {"requests": requests, "ok": requests - non_2xx, "refused": non_2xx,
                              "socket_errors": errors, "seconds": took_s, "allowed": allowed,
                              "share": (requests - non_2xx) / allowed}
    finally:
        for server in rate.values():
            server.stop()
        shutil.rmtree(work, ignore_errors=True)

    report = {"cost": {name: {"rps": statistics.median(r["rps"] for r in runs),
                              "cpu_us": statistics.median(r["cpu_us"] for r in runs), "rounds": runs}
                       for name, runs in cost.items()},
              "accuracy": accuracy}
    plain, limited = report["cost"]["plain"], report["cost"]["limited"]
    paired = statistics.median(l["cpu_us"] / p["cpu_us"] for p, l in zip(cost["plain"], cost["limited"]))
    report["cost"]["paired_ratio"] = paired
    lines = [f"Cost: hello keep-alive, wrk -t1 -c32 -d{args.cost_seconds}s on CPU 1, cspd one worker and one loop on "
             f"CPU 0, {args.rounds} alternating rounds, medians; {os.cpu_count()} CPUs\n",
             "| cspd | req/s | CPU µs/answer |", "|---|---:|---:|",
             f"| without --client-rate | {plain['rps']:,.0f} | {plain['cpu_us']:.2f} |",
             f"| --client-rate 1000000 (never refuses) | {limited['rps']:,.0f} | {limited['cpu_us']:.2f} |", "",
             f"- CPU per answer with the limit: {limited['cpu_us'] / plain['cpu_us']:.3f}x of the medians, "
             f"{paired:.3f}x the median of each round's ratio (goal <= 1.03)", "",
             f"Accuracy: one client, wrk -t1 -c8 -d{args.seconds}s, 100 requests a second after a burst of 20\n",
             "| server | requests | 200 | 429 | seconds (wrk's) | allowed by the bucket | 200 / allowed |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for name, label in (("cspd", "cspd, 2 workers x 2 loops, --client-rate 100 --client-burst 20"),
                        ("nginx", "nginx limit_req rate=100r/s burst=20 nodelay")):
        a = accuracy[name]
        lines.append(f"| {label} | {a['requests']:,} | {a['ok']:,} | {a['refused']:,} | {a['seconds']:.2f} | "
                     f"{a['allowed']:.0f} | {a['share']:.3f} |")
    text = "\n".join(lines)
    print(text)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "client_limits.json").write_text(json.dumps(report, indent=1) + "\n")
        (args.out / "client_limits.md").write_text("# bench/client_limits.py\n\n" + text + "\n")


if __name__ == "__main__":
    main()
