#!/usr/bin/env python3
"""Many deferred replies at once (SDK 2): N connections each wait for a reply deferred on
a loop timer; the worker's RSS is read once every reply is owed, against the same N
connections idle, and every reply must arrive when the timers fire. Loopback only; bounded.

    python3 bench/pending.py --cspd build-bench/cspd [--connections 10000] [--hold-ms 8000]
"""
import argparse
import re
import resource
import selectors
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

from harness import ROOT, build_handler, wait_for_port, work_folder

PORT = 18891


def rss_kib(pid):
    total = 0
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    for p in [pid] + [int(c) for c in children]:
        for line in Path(f"/proc/{p}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                total += int(line.split()[1])
    return total


def metric(name):
    with socket.create_connection(("127.0.0.1", PORT)) as s:
        s.sendall(b"GET /metrics HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n")
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    m = re.search(rf"\n{name} ([0-9.e+]+)\n", data.decode())
    return float(m.group(1)) if m else -1


def open_all(n):
    socks = []
    for _ in range(n):
        s = socket.create_connection(("127.0.0.1", PORT))
        s.setblocking(False)
        socks.append(s)
    return socks


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cspd", type=Path, required=True)
    parser.add_argument("--connections", type=int, default=10000)
    parser.add_argument("--hold-ms", type=int, default=8000)
    args = parser.parse_args()
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))

    work = work_folder("cspd-pending-")
    handlers = work / "handlers"
    handlers.mkdir()
    build_handler(ROOT / "tests/handlers/later.c", handlers / "later.so")
    server = subprocess.Popen([str(args.cspd.resolve()), "--port", str(PORT), "--bind", "127.0.0.1", "--workers", "1",
                               "--handlers", str(handlers), "--www", str(ROOT / "www"), "--log-level", "warn",
                               "--max-connections", str(args.connections + 100), "--keepalive-timeout", "300",
                               "--pending-timeout", str(args.hold_ms // 1000 + 30)])
    try:
        wait_for_port(PORT)
        base = rss_kib(server.pid)
        # The same number of connections, idle (each answered once, then parked), as the reference.
        idle = open_all(args.connections)
        for s in idle:
            s.send(b"GET /csp/later/now HTTP/1.1\r\nHost: h\r\n\r\n")
        time.sleep(4)  # answered, and parked after two quiet ticks
        idle_rss = rss_kib(server.pid)
        for s in idle:
            s.close()
        time.sleep(2)
        base2 = rss_kib(server.pid)
        owed = open_all(args.connections)
        request = f"GET /csp/later/timer?ms={args.hold_ms} HTTP/1.1\r\nHost: h\r\n\r\n".encode()
        started = time.time()
        for s in owed:
            s.send(request)
        while metric("cspd_replies_owed") < args.connections and time.time() - started < args.hold_ms / 1000:
            time.sleep(0.2)
        owed_count = metric("cspd_replies_owed")
        owed_rss = rss_kib(server.pid)
        # Every reply arrives when its timer fires.
        sel = selectors.DefaultSelector()
        for s in owed:
            sel.register(s, selectors.EVENT_READ)
        answered, got = 0, {}
        end = time.time() + args.hold_ms / 1000 + 30
        while answered < len(owed) and time.time() < end:
            for key, _ in sel.select(timeout=1):
                data = key.fileobj.recv(4096)
                got[key.fileobj] = got.get(key.fileobj, b"") + data
                if b"v1 from a timer" in got[key.fileobj]:
                    answered += 1
                    sel.unregister(key.fileobj)
        for s in owed:
            s.close()
    finally:
        server.terminate()
        server.wait(30)
        shutil.rmtree(work, ignore_errors=True)

    n = args.connections
    print(f"{n} connections, idle (parked):         {(idle_rss - base) * 1024 / n:7.0f} B each")
    print(f"{n} connections, each owed a deferred reply: {(owed_rss - base2) * 1024 / n:7.0f} B each "
          f"({owed_count:.0f} owed when measured)")
    print(f"the deferred reply itself:               {((owed_rss - base2) - (idle_rss - base)) * 1024 / n:7.0f} B each")
    # What the idle round freed and the owed round took again does not show above; against the
    # server before any connection, everything the owed connections hold counts.
    print(f"owed, against the server before any connection: {(owed_rss - base) * 1024 / n:7.0f} B each")
    print(f"answered when the timers fired: {answered} of {n}")


if __name__ == "__main__":
    main()
