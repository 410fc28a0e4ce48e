#!/usr/bin/env python3
"""bench/guard's comparison: the ratios of a short run beside those of the recorded full run.

    python3 bench/guard.py RECORDED_DIR TODAY_DIR

RECORDED_DIR holds bench/run's results.json and h2.json; TODAY_DIR holds h1/results.json and
h2/h2.json from bench/guard's short run. For each case both hold: cspd's CPU per request over
each peer's (and over the epoll ceiling's), req/s as a share of each peer's, and idle bytes per
connection over each peer's. Prints a markdown table; a ratio that moved by more than 10% is
marked. Exits 0: it reports, it does not judge (the machine's noise is its own)."""
import json
import statistics
import sys
from pathlib import Path

THRESHOLD = 0.10


def h1_ratios(report):
    """{(case, measure): ratio} from bench.py's results.json."""
    ratios = {}
    for row in report.get("rows", []):
        servers = row["servers"]
        me = servers.get("cspd")
        if not me:
            continue
        for peer, them in servers.items():
            if peer == "cspd" or not them:
                continue
            case = f"HTTP/1 {row['mode']} /csp/{row['endpoint']} vs {peer}"
            if me.get("cpu_us_per_req") and them.get("cpu_us_per_req"):
                ratios[(case, "CPU/request")] = me["cpu_us_per_req"] / them["cpu_us_per_req"]
            if me.get("rps") and them.get("rps"):
                ratios[(case, "req/s")] = me["rps"] / them["rps"]
    idle = report.get("idle", {})
    for peer, them in idle.items():
        if peer != "cspd" and "cspd" in idle and them.get("bytes_per_connection"):
            ratios[(f"HTTP/1 idle connection vs {peer}", "bytes")] = (
                idle["cspd"]["bytes_per_connection"] / them["bytes_per_connection"])
    return ratios


def h2_ratios(report):
    """{(case, measure): ratio} from h2.py's h2.json (medians over its rounds)."""
    ratios = {}
    raw = report.get("raw", {})

    def median(server, case, key):
        values = [r[key] for r in raw.get(server, {}).get(case, []) if r.get(key)]
        return statistics.median(values) if values else None

    for case in raw.get("cspd", {}):
        for peer in raw:
            if peer == "cspd":
                continue
            for key, measure in (("cpu_us", "CPU/request"), ("per_s", "req/s")):
                mine, theirs = median("cspd", case, key), median(peer, case, key)
                if mine and theirs:
                    ratios[(f"HTTP/2 {case} vs {peer}", measure)] = mine / theirs
    idle = report.get("idle") or {}
    for peer, them in idle.items():
        if peer != "cspd" and "cspd" in idle and them.get("bytes_per_connection"):
            ratios[(f"HTTP/2 idle h2c connection vs {peer}", "bytes")] = (
                idle["cspd"]["bytes_per_connection"] / them["bytes_per_connection"])
    return ratios


def load(path):
    return json.loads(path.read_text()) if path.exists() else {}


def main():
    recorded_dir, today_dir = Path(sys.argv[1]), Path(sys.argv[2])
    recorded = {**h1_ratios(load(recorded_dir / "results.json")), **h2_ratios(load(recorded_dir / "h2.json"))}
    today = {**h1_ratios(load(today_dir / "h1" / "results.json")), **h2_ratios(load(today_dir / "h2" / "h2.json"))}
    print("| case | measure | recorded | today | moved |")
    print("|---|---|---:|---:|---|")
    moved = 0
    for key in sorted(today):
        case, measure = key
        now = today[key]
        then = recorded.get(key)
        if then is None:
            print(f"| {case} | {measure} | – | {now:.2f} | new |")
            continue
        change = now / then - 1
        # Lower is better for CPU and bytes, higher for req/s.
        worse = change > 0 if measure in ("CPU/request", "bytes") else change < 0
        flag = ""
        if abs(change) > THRESHOLD:
            moved += 1
            flag = f"**{'worse' if worse else 'better'} {change:+.0%}**"
        print(f"| {case} | {measure} | {then:.2f} | {now:.2f} | {flag} |")
    print(f"\n{moved} ratio(s) moved by more than {THRESHOLD:.0%} against the recorded run.")


if __name__ == "__main__":
    main()
