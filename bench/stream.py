#!/usr/bin/env python3
"""Streaming a large body to curl over loopback (SDK 2.1): a repeated block written on the
event loop (CSP_AGAIN and on-writable) and from a thread (writes wait for room), the export
example's generated CSV, and, for reference, a static file of the same size sent with
sendfile. Each is fetched --runs times; the median rate is quoted, with the worker's RSS
growth over the transfer (sampled every 10 ms). Loopback only; bounded by --mb and --runs.

    python3 bench/stream.py --cspd build/cspd [--mb 1024] [--runs 5]
"""
import argparse
import shutil
import statistics
import subprocess
import tempfile
import threading
import time
from pathlib import Path

from harness import ROOT, build_handler, wait_for_port, work_folder

PORT = 18893


def rss_kib(pid):
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def worker_of(master):
    children = Path(f"/proc/{master}/task/{master}/children").read_text().split()
    return int(children[0]) if children else master


def fetch(url, worker):
    """One transfer with curl: (bytes, seconds, RSS growth in KiB at its peak)."""
    before = rss_kib(worker)
    peak = [before]
    done = threading.Event()

    def sample():
        while not done.is_set():
            peak[0] = max(peak[0], rss_kib(worker))
            time.sleep(0.01)

    sampler = threading.Thread(target=sample)
    sampler.start()
    out = subprocess.run(["curl", "-s", "-o", "/dev/null", "--max-time", "120", "-w",
                          "%{size_download} %{time_total}", url], capture_output=True, text=True, check=True).stdout
    done.set()
    sampler.join()
    size, seconds = out.split()
    return int(size), float(seconds), peak[0] - before


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cspd", type=Path, required=True)
    parser.add_argument("--mb", type=int, default=1024)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()

    work = work_folder("cspd-stream-")
    handlers, www = work / "handlers", work / "www"
    handlers.mkdir()
    www.mkdir()
    build_handler(ROOT / "bench/handlers/blob.c", handlers / "blob.so")
    build_handler(ROOT / "examples/export.c", handlers / "export.so")
    with open(www / "big.bin", "wb") as f:
        f.truncate(args.mb << 20)  # sparse: the page cache serves zeros
    server = subprocess.Popen([str(args.cspd.resolve()), "--port", str(PORT), "--bind", "127.0.0.1", "--workers", "1",
                               "--handlers", str(handlers), "--www", str(www), "--log-level", "warn"])
    base = f"http://127.0.0.1:{PORT}"
    cases = [("stream, loop writer (on-writable)", f"{base}/csp/blob/loop?mb={args.mb}"),
             ("stream, thread writer (waits for room)", f"{base}/csp/blob/thread?mb={args.mb}"),
             ("export example (CSV made on the loop)", f"{base}/csp/export?mb={args.mb}"),
             ("static file, sendfile (reference)", f"{base}/big.bin")]
    results = []
    try:
        wait_for_port(PORT)
        worker = worker_of(server.pid)
        fetch(cases[0][1], worker)  # warm: the first transfer grows the socket buffers
        for name, url in cases:
            runs = [fetch(url, worker) for _ in range(args.runs)]
            rates = [size / seconds / 1e9 for size, seconds, _ in runs]
            results.append((name, runs[0][0], statistics.median(rates), max(g for _, _, g in runs)))
    finally:
        server.terminate()
        server.wait(30)
        shutil.rmtree(work, ignore_errors=True)

    print(f"{args.mb} MiB to curl over loopback, median of {args.runs} runs; RSS growth: the worst run's peak")
    print("| body | bytes | GB/s | RSS growth |")
    print("|---|---:|---:|---:|")
    for name, size, rate, growth in results:
        print(f"| {name} | {size:,} | {rate:.2f} | {growth:,} KiB |")


if __name__ == "__main__":
    main()
