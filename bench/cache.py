#!/usr/bin/env python3
"""The reply cache (csp_reply_cache): a small dynamic page served from the cache, against the same
page built on every call, against xpng (the cheapest handler there is: 68 bytes, no work).

Builds bench/handlers/page.c twice (page.so builds the page each time, page_cached.so asks for it
to be cached for 60 s), starts one cspd (--workers 1 --threads 1, so all three share one loop and
its core, CPU 0), checks each answers, then runs wrk (pinned to CPU 1) against each in alternating rounds and prints the
median req/s of each with the ratios. Loopback only; bounded by wrk's durations.

    python3 bench/cache.py [--build build] [--seconds 5] [--rounds 3]
"""
import argparse
import os
import shutil
import statistics
import subprocess
import tempfile
import urllib.request
from pathlib import Path

from harness import ROOT, build_handler, wait_for_port, wrk, work_folder

PORT = 18894


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", type=Path, default=ROOT / "build", help="a build folder with cspd")
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    work = work_folder("cspd-cache-bench-")
    handlers = work / "handlers"
    handlers.mkdir()
    build_handler(ROOT / "bench/handlers/page.c", handlers / "page.so")
    build_handler(ROOT / "bench/handlers/page.c", handlers / "page_cached.so", ["-DPAGE_CACHED=1"])
    shutil.copy(args.build / "handlers/xpng.so", handlers / "xpng.so")
    base = f"http://127.0.0.1:{PORT}"
    cases = [("xpng (68 bytes, no work)", f"{base}/csp/xpng"),
             ("page, built on every call", f"{base}/csp/page?who=Eva"),
             ("page, from the reply cache", f"{base}/csp/page_cached?who=Eva")]
    runs = {label: [] for label, _ in cases}
    server = subprocess.Popen(["taskset", "-c", "0", str((args.build / "cspd").resolve()), "--port", str(PORT), "--bind", "127.0.0.1",
                               "--workers", "1", "--threads", "1", "--handlers", str(handlers), "--www",
                               str(ROOT / "www"), "--log-level", "warn"])
    try:
        wait_for_port(PORT)
        pages = [urllib.request.urlopen(url, timeout=5).read() for _, url in cases[1:]]
        if pages[0] != pages[1] or len(pages[0]) < 2000:
            raise RuntimeError("the cached page differs from the uncached one")
        for _, url in cases:
            wrk(url, threads=1, connections=32, seconds=1)  # warm-up
        for _ in range(args.rounds):
            for label, url in cases:
                result = wrk(url, threads=1, connections=32, seconds=args.seconds, cpu="1")
                if result["non_2xx"]:
                    raise RuntimeError(f"{url}: {result['non_2xx']} non-2xx answers")
                runs[label].append(result["rps"])
        metrics = urllib.request.urlopen(f"{base}/metrics", timeout=5).read().decode()
    finally:
        server.terminate()
        server.wait(15)
        shutil.rmtree(work, ignore_errors=True)

    median = {label: statistics.median(values) for label, values in runs.items()}
    xpng, built, cached = (median[label] for label, _ in cases)
    print(f"wrk -t1 -c32 -d{args.seconds}s on CPU 1, {args.rounds} alternating rounds, medians; cspd --workers 1 --threads 1 on CPU 0; "
          f"{os.cpu_count()} CPUs shared by wrk and cspd\n")
    print("| handler | median req/s | rounds |")
    print("|---|---:|---|")
    for label, _ in cases:
        print(f"| {label} | {median[label]:,.0f} | {', '.join(f'{v:,.0f}' for v in runs[label])} |")
    print(f"\ncached / xpng: {cached / xpng:.2f}x (goal >= 0.9); cached / built: {cached / built:.2f}x")
    hits = [line for line in metrics.splitlines() if line.startswith("cspd_reply_cache_")]
    print("\n" + "\n".join(hits))


if __name__ == "__main__":
    main()
