#!/usr/bin/env python3
"""Writes the figures of bench/results/results.json into the README's Performance section."""
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TITLES = {"keepalive": "keep-alive", "pipelined": "pipelined ×16", "close": "new connection each", "ab": "ab -n 1000 -c 1000"}


def main():
    report = json.loads((ROOT / "bench/results/results.json").read_text())
    rows = []
    for row in report["rows"]:
        me = row["servers"]["cspd"]
        best = row["servers"][row["best_peer"]]
        lean = row["servers"][row["leanest_peer"]]
        rows.append(f"| {TITLES[row['mode']]} | /csp/{row['endpoint']} | {me['rps']:,.0f} | {best['rps']:,.0f} ({row['best_peer']}) | "
                    f"{row['rps_ratio']:.2f}× | {me['cpu_us_per_req']:.2f} µs | {lean['cpu_us_per_req']:.2f} µs ({row['leanest_peer']}) |")
    idle = report.get("idle", {})
    reload = report.get("reload", {})
    micro = "?"
    micro_file = ROOT / "bench/results/micro.txt"
    if micro_file.exists():
        m = re.search(r"BM_Hello_median\s+([\d.]+) ns", micro_file.read_text())
        micro = m.group(1) if m else "?"
    block = ["| mode | endpoint | cspd req/s | best peer req/s | cspd / best peer | cspd CPU/req | leanest peer CPU/req |",
             "|---|---|---:|---:|---:|---:|---:|", *rows, "",
             f"Also measured: 10,000 idle keep-alive connections cost cspd "
             f"{idle.get('cspd', {}).get('bytes_per_connection', 0):,.0f} B of RSS each (nginx "
             f"{idle.get('nginx', {}).get('bytes_per_connection', 0):,.0f} B, h2o "
             f"{idle.get('h2o', {}).get('bytes_per_connection', 0):,.0f} B); replacing `hello.so` 10 times a second "
             f"under keep-alive load kept {reload.get('ratio', 0) * 100:.0f}% of the undisturbed throughput with "
             f"{reload.get('errors', '?')} failed requests out of {reload.get('requests', 0):,}. The request path "
             f"without sockets (parse, route, handler, response; Google Benchmark) takes {micro} ns for `/csp/hello`.",
             "", f"Run on {report['machine']}, {report['date']}."]
    readme = (ROOT / "README.md").read_text()
    begin = readme.index("<!-- bench:begin")
    begin = readme.index("\n", begin) + 1
    end = readme.index("<!-- bench:end -->")
    readme = readme[:begin] + "\n".join(block) + "\n" + readme[end:]
    (ROOT / "README.md").write_text(readme)

if __name__ == "__main__":
    sys.exit(main())
