#!/usr/bin/env python3
"""Hot reload under load: keep-alive throughput of /csp/hello while hello.so is replaced by a
new version (new bytes each time, so each is vetted and loaded for real) 10 times a second,
against the same server undisturbed; with 1 and with 2 worker processes.

The two phases alternate within each run, so slow minutes of a shared machine fall on both;
the report gives medians over the runs and their ratio (issue 24's goal: the swapping phase
keeps at least 95% of the undisturbed throughput). Loopback only; every phase is bounded by
wrk's duration. With --baseline, an earlier build is measured the same way beside this one.

    python3 bench/reload.py --cspd build/cspd --handlers build/handlers [--baseline OLD/cspd] \\
        [--workers 1,2] [--runs 5] [--seconds 4]
"""
import argparse
import re
import shutil
import statistics
import subprocess
import tempfile
import threading
import time
from pathlib import Path

from harness import ROOT, wait_for_port, work_folder

PORT = 18891


def wrk(seconds):
    out = subprocess.run(["taskset", "-c", "1", "wrk", "-t1", "-c64", f"-d{seconds}s", "--timeout", "2s",
                          f"http://127.0.0.1:{PORT}/csp/hello"], capture_output=True, text=True, check=True).stdout
    errors = sum(int(n) for n in re.findall(r"(?:connect|read|write|timeout) (\d+)", out))
    bad = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    return float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1)), errors + (int(bad.group(1)) if bad else 0)


class Swapper:
    """Replaces hello.so `rate` times a second, each time with a new version (a counter appended
    after the ELF image changes its hash, not its code), by rename as deploy tools do."""

    def __init__(self, handlers, rate):
        self.source = handlers / "hello.so"
        self.image = self.source.read_bytes()
        self.rate = rate
        self.count = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run)

    def run(self):
        while not self.stop.is_set():
            self.count += 1
            temporary = self.source.with_name(".hello.so.part")
            temporary.write_bytes(self.image + self.count.to_bytes(8, "little"))
            temporary.replace(self.source)
            self.stop.wait(1 / self.rate)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join()


def measure(cspd, handlers, workers, runs, seconds, rate, extra=()):
    work = work_folder("cspd-reload-")
    (work / "handlers").mkdir()
    shutil.copy(handlers / "hello.so", work / "handlers" / "hello.so")
    server = subprocess.Popen(["taskset", "-c", "0", str(cspd.resolve()), "--port", str(PORT), "--bind", "127.0.0.1",
                               "--workers", str(workers), "--handlers", str(work / "handlers"), "--www",
                               str(ROOT / "www"), "--log-level", "warn", *extra])
    still, swapping, errors, swaps = [], [], 0, 0
    try:
        wait_for_port(PORT)
        wrk(1)  # warm-up
        for _ in range(runs):
            rps, bad = wrk(seconds)
            still.append(rps)
            errors += bad
            with Swapper(work / "handlers", rate) as swapper:
                rps, bad = wrk(seconds)
            swapping.append(rps)
            errors += bad
            swaps += swapper.count
            time.sleep(0.5)  # the last swap settles before the next undisturbed phase
    finally:
        server.terminate()
        server.wait(timeout=30)
        shutil.rmtree(work, ignore_errors=True)
    return {"undisturbed": statistics.median(still), "swapping": statistics.median(swapping),
            "ratio": statistics.median(swapping) / statistics.median(still), "swaps": swaps, "errors": errors,
            "runs": list(zip(still, swapping))}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cspd", type=Path, required=True)
    parser.add_argument("--handlers", type=Path, required=True, help="folder with hello.so")
    parser.add_argument("--baseline", type=Path, default=None, help="an earlier cspd binary, measured the same way")
    parser.add_argument("--workers", default="1,2")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--seconds", type=int, default=4)
    parser.add_argument("--rate", type=float, default=10, help="replacements a second")
    parser.add_argument("--server-args", default="", help="more cspd arguments, e.g. --no-vetting")
    args = parser.parse_args()

    builds = [("this build", args.cspd)] + ([("baseline", args.baseline)] if args.baseline else [])
    print(f"| build | workers | undisturbed req/s | swapping {args.rate:g}/s req/s | ratio | swaps | failed |")
    print("|---|---|---|---|---|---|---|")
    for workers in [int(w) for w in args.workers.split(",")]:
        for name, cspd in builds:
            r = measure(cspd, args.handlers, workers, args.runs, args.seconds, args.rate, args.server_args.split())
            print(f"| {name} | {workers} | {r['undisturbed']:,.0f} | {r['swapping']:,.0f} | {r['ratio'] * 100:.1f}% | "
                  f"{r['swaps']} | {r['errors']} |", flush=True)


if __name__ == "__main__":
    main()
