#!/usr/bin/env python3
"""Blocking handlers under load (SDK 2): /csp/hello alone, then /csp/hello while 64 clients
hold a blocking handler that waits 200 ms per call (as a database call would).

Reports hello's req/s and p99 in both phases and their ratios, and the blocking endpoint's
throughput against what its pool allows (--blocking-threads / 0.2 s). Loopback only; every
run is bounded by wrk's duration.

    python3 bench/blocking.py --cspd build-bench/cspd --handlers build-bench/handlers [--seconds 5]
"""
import argparse
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from harness import ROOT, build_handler, wait_for_port, work_folder

PORT = 18890


def wrk(path, connections, seconds, threads=1):
    out = subprocess.run(["taskset", "-c", "1", "wrk", "-t", str(threads), "-c", str(connections), "-d", f"{seconds}s",
                          "--latency", f"http://127.0.0.1:{PORT}{path}"], capture_output=True, text=True).stdout
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    p99 = re.search(r"99%\s+([\d.]+)(us|ms|s)", out)
    scale = {"us": 1e-3, "ms": 1.0, "s": 1e3}[p99.group(2)]
    return rps, float(p99.group(1)) * scale


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cspd", type=Path, required=True)
    parser.add_argument("--handlers", type=Path, required=True, help="folder with hello.so")
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--blocking-threads", type=int, default=64)
    args = parser.parse_args()

    work = work_folder("cspd-blocking-")
    handlers = work / "handlers"
    handlers.mkdir()
    shutil.copy(args.handlers / "hello.so", handlers / "hello.so")
    build_handler(ROOT / "tests/handlers/slow.c", handlers / "slow.so")
    server = subprocess.Popen(["taskset", "-c", "0", str(args.cspd.resolve()), "--port", str(PORT), "--bind",
                               "127.0.0.1", "--workers", "1", "--handlers", str(handlers), "--www", str(ROOT / "www"),
                               "--log-level", "warn", "--blocking-threads", str(args.blocking_threads)])
    try:
        wait_for_port(PORT)
        wrk("/csp/hello", 8, 1)  # warm-up
        alone_rps, alone_p99 = wrk("/csp/hello", 8, args.seconds)
        held = subprocess.Popen(["taskset", "-c", "1", "wrk", "-t", "1", "-c", "64", "-d", f"{args.seconds + 2}s",
                                 f"http://127.0.0.1:{PORT}/csp/slow?ms=200"], stdout=subprocess.PIPE, text=True)
        time.sleep(1)  # the 64 blocking calls are in
        busy_rps, busy_p99 = wrk("/csp/hello", 8, args.seconds)
        slow_out = held.communicate()[0]
        slow_rps = float(re.search(r"Requests/sec:\s+([\d.]+)", slow_out).group(1))
    finally:
        server.terminate()
        server.wait(15)
        shutil.rmtree(work, ignore_errors=True)

    allowed = min(64, args.blocking_threads) / 0.2
    print(f"hello alone:                        {alone_rps:10,.0f} req/s  p99 {alone_p99:7.2f} ms")
    print(f"hello with 64 clients on slow 200ms: {busy_rps:10,.0f} req/s  p99 {busy_p99:7.2f} ms")
    print(f"ratio: req/s {busy_rps / alone_rps:.2f}x, p99 {busy_p99 / alone_p99:.2f}x")
    print(f"slow endpoint: {slow_rps:,.1f} req/s of {allowed:,.0f} its pool allows ({slow_rps / allowed:.2f})")


if __name__ == "__main__":
    main()
