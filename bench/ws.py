#!/usr/bin/env python3
"""WebSocket side by side: cspd against npm's ws (Node, one process), doing the same work.

- echo: 64 connections each keep 16 messages of 1 KiB in flight to /csp/ws_echo (examples/ws_echo.c
  for cspd); messages/s and server CPU per message. cspd: one worker, one loop; both servers pinned
  to CPU 0, the client to CPU 1.
- fan-out: 10,000 clients of /csp/chat (examples/chat.cpp: a topic; cspd with 2 workers, so the
  topic crosses processes), one of them says a line, everyone must hear it: the time until the last
  one has, and server CPU per delivered message; median of the rounds.
- idle: RSS growth per idle WebSocket, 10,000 of them held open (cspd: one worker).
- floor: what the kernel alone charges a fan-out here: a C loop (bench/loopback_floor.c, built with
  cc) writes one small message to each of up to 5,000 loopback sockets on CPU 0, µs per write.
  Loopback runs the receiver's TCP processing inside the sender's write, so this is a floor under
  any server's CPU per delivered message on this machine.

    python3 bench/ws.py [--cspd build/cspd] [--handlers build/test-handlers/examples] [--rounds 3]
                        [--seconds 5] [--clients 10000] [--out bench/results]
"""
import argparse
import json
import os
import resource
import selectors
import socket
import statistics
import struct
import subprocess
import time
from pathlib import Path

import bench
from harness import ROOT, wait_for_port, work_folder

SERVER_CPU, CLIENT_CPU = bench.SERVER_CPU, bench.CLIENT_CPU


def handshake(port, path):
    s = socket.create_connection(("127.0.0.1", port))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    s.sendall((f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
               "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
    data = b""
    while b"\r\n\r\n" not in data:
        got = s.recv(4096)
        if not got:
            raise RuntimeError(f"closed during the handshake to {path}")
        data += got
    head, rest = data.split(b"\r\n\r\n", 1)
    if not head.startswith(b"HTTP/1.1 101"):
        raise RuntimeError(f"{path}: {head[:60]!r}")
    return s, rest


def client_frame(opcode, payload):
    """A masked client frame with an all-zero key: the payload goes as it is (and stays legal)."""
    n = len(payload)
    head = bytes([0x80 | opcode]) + (bytes([0x80 | n]) if n < 126 else bytes([0x80 | 126]) + struct.pack(">H", n))
    return head + b"\0\0\0\0" + payload


def frames_in(buffer):
    """Whole server frames at the front of `buffer`: (their payloads, what is left)."""
    out, at = [], 0
    while len(buffer) - at >= 2:
        n, start = buffer[at + 1] & 0x7F, at + 2
        if n == 126:
            if len(buffer) - at < 4:
                break
            n, start = struct.unpack(">H", buffer[at + 2:at + 4])[0], at + 4
        elif n == 127:
            if len(buffer) - at < 10:
                break
            n, start = struct.unpack(">Q", buffer[at + 2:at + 10])[0], at + 10
        if len(buffer) < start + n:
            break
        out.append(buffer[start:start + n])
        at = start + n
    return out, buffer[at:]


class Peer(bench.Server):
    def start(self):
        log = open(self.work / "server.log", "wb")
        self.proc = subprocess.Popen(["taskset", "-c", SERVER_CPU] + self.command(), stdout=log, stderr=log,
                                     cwd=self.work, start_new_session=True)
        wait_for_port(self.port)
        s, _ = handshake(self.port, "/csp/ws_echo")
        s.close()


class Cspd(Peer):
    def __init__(self, port, work, binary, handlers, workers):
        super().__init__("cspd", port, work, "cspd")
        self.binary, self.handlers, self.workers = binary, handlers, workers

    def command(self):
        return [str(self.binary), "--port", str(self.port), "--bind", "127.0.0.1", "--workers", str(self.workers),
                "--threads", "1", "--handlers", str(self.handlers), "--log-level", "warn", "--max-connections",
                "30000", "--ws-ping-interval", "0", "--ws-idle-timeout", "0"]


class Node(Peer):
    def __init__(self, port, work):
        super().__init__("node ws", port, work, "npm ws")

    def command(self):
        return ["node", str(ROOT / "bench" / "ws_node_server.mjs"), str(self.port)]


def echo(peer, seconds, connections=64, window=16, size=1024):
    socks = [handshake(peer.port, "/csp/ws_echo")[0] for _ in range(connections)]
    message = client_frame(0x2, os.urandom(size))
    answer_bytes = 4 + size
    selector = selectors.DefaultSelector()
    owed = {}
    for s in socks:
        s.setblocking(False)
        s.sendall(message * window)
        owed[s] = [window * answer_bytes, 0]
        selector.register(s, selectors.EVENT_READ)
    done = 0
    cpu0, t0 = peer.cpu_ns(), time.time()
    end = t0 + seconds
    while time.time() < end:
        for key, _ in selector.select(0.5):
            s = key.fileobj
            got = s.recv(1 << 18)
            if not got:
                raise RuntimeError(f"{peer.name} closed an echo connection")
            state = owed[s]
            state[1] += len(got)
            whole = state[1] // answer_bytes
            if whole:
                state[1] -= whole * answer_bytes
                done += whole
                s.sendall(message * whole)  # keep the window full
    elapsed, cpu = time.time() - t0, peer.cpu_ns() - cpu0
    for s in socks:
        s.close()
    return {"messages_per_s": done / elapsed, "cpu_us_per_message": cpu / 1000 / max(done, 1)}


def open_many(port, path, count, welcome=True):
    socks, selector = [], selectors.DefaultSelector()
    for i in range(count):
        s, rest = handshake(port, path)
        s.setblocking(False)
        socks.append([s, rest])
    if welcome:  # chat greets each newcomer with its worker: wait for every greeting
        waiting = {}
        for entry in socks:
            frames, entry[1] = frames_in(entry[1])  # the greeting may have come with the 101
            if not frames:
                waiting[id(entry[0])] = entry
            selector.register(entry[0], selectors.EVENT_READ, entry)
        deadline = time.time() + 60
        while waiting and time.time() < deadline:
            for key, _ in selector.select(1):
                entry = key.data
                entry[1] += entry[0].recv(1 << 16)
                frames, entry[1] = frames_in(entry[1])
                if frames:
                    waiting.pop(id(entry[0]), None)
        if waiting:
            raise RuntimeError(f"{len(waiting)} clients were never greeted")
        selector.close()
    return socks


def fanout(peer, clients, rounds):
    socks = open_many(peer.port, "/csp/chat", clients)
    selector = selectors.DefaultSelector()
    for entry in socks:
        selector.register(entry[0], selectors.EVENT_READ, entry)
    times, cpu_total = [], 0
    for r in range(rounds):
        line = f"round {r} " + "x" * 40
        heard = set()
        cpu0, t0 = peer.cpu_ns(), time.perf_counter()
        socks[r % len(socks)][0].sendall(client_frame(0x1, line.encode()))
        last = t0
        deadline = time.time() + 30
        while len(heard) < len(socks) and time.time() < deadline:
            for key, _ in selector.select(1):
                entry = key.data
                entry[1] += entry[0].recv(1 << 16)
                frames, entry[1] = frames_in(entry[1])
                if any(f == line.encode() for f in frames):
                    heard.add(id(entry[0]))
                    last = time.perf_counter()
        if len(heard) < len(socks):
            raise RuntimeError(f"{peer.name}: {len(socks) - len(heard)} of {len(socks)} never heard round {r}")
        time.sleep(0.3)  # let the server's CPU settle into the count
        cpu_total += peer.cpu_ns() - cpu0
        times.append((last - t0) * 1000)
    for entry in socks:
        entry[0].close()
    return {"ms_until_last": statistics.median(times), "all_ms": [round(t, 1) for t in times],
            "cpu_us_per_delivery": cpu_total / 1000 / (clients * rounds)}


def idle(peer, clients):
    before = peer.rss_kib()
    socks = open_many(peer.port, "/csp/ws_echo", clients, welcome=False)
    time.sleep(1.5)
    after = peer.rss_kib()
    for entry in socks:
        entry[0].close()
    return {"bytes_per_connection": (after - before) * 1024 / clients}


def floor(work, clients):
    binary = Path(work) / "loopback_floor"
    subprocess.run(["cc", "-O2", "-o", str(binary), str(ROOT / "bench" / "loopback_floor.c")], check=True)
    out = subprocess.run(["taskset", "-c", SERVER_CPU, str(binary), str(min(clients, 5000)), "7", "50"],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--cspd", default=str(ROOT / "build" / "cspd"))
    parser.add_argument("--handlers", default=str(ROOT / "build" / "test-handlers" / "examples"))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=5)
    parser.add_argument("--clients", type=int, default=10000)
    parser.add_argument("--out", default=str(ROOT / "bench" / "results"))
    args = parser.parse_args()
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    os.sched_setaffinity(0, {int(CLIENT_CPU)})
    work = work_folder("ws-bench-")
    handlers = Path(work) / "handlers"
    handlers.mkdir(exist_ok=True)
    for name in ("ws_echo.so", "chat.so"):
        (handlers / name).write_bytes((Path(args.handlers) / name).read_bytes())
    results = {}

    def run(peer, what):
        peer.start()
        try:
            return what(peer)
        finally:
            peer.stop()

    port = 18400
    for r in range(args.rounds):
        for make in (lambda: Cspd(port, Path(work), args.cspd, handlers, 1), lambda: Node(port + 1, Path(work))):
            peer = make()
            results.setdefault(peer.name, {}).setdefault("echo", []).append(run(peer, lambda p: echo(p, args.seconds)))
    for make in (lambda: Cspd(port + 2, Path(work), args.cspd, handlers, 2), lambda: Node(port + 3, Path(work))):
        peer = make()
        results[peer.name]["fanout"] = run(peer, lambda p: fanout(p, args.clients, max(3, args.rounds)))
    for make in (lambda: Cspd(port + 4, Path(work), args.cspd, handlers, 1), lambda: Node(port + 5, Path(work))):
        peer = make()
        results[peer.name]["idle"] = run(peer, lambda p: idle(p, args.clients))

    kernel = floor(work, args.clients)
    summary = {}
    for name, r in results.items():
        summary[name] = {
            "echo_messages_per_s": statistics.median(e["messages_per_s"] for e in r["echo"]),
            "echo_cpu_us_per_message": statistics.median(e["cpu_us_per_message"] for e in r["echo"]),
            "fanout_ms_until_last": r["fanout"]["ms_until_last"],
            "fanout_all_ms": r["fanout"]["all_ms"],
            "fanout_cpu_us_per_delivery": r["fanout"]["cpu_us_per_delivery"],
            "idle_bytes_per_connection": r["idle"]["bytes_per_connection"],
        }
    c, n = summary["cspd"], summary["node ws"]
    lines = [
        "# WebSocket: cspd against npm's ws (Node)",
        "",
        f"`python3 bench/ws.py --rounds {args.rounds} --seconds {args.seconds} --clients {args.clients}`; "
        "servers pinned to CPU 0, the client to CPU 1, loopback.",
        "",
        "| measure | cspd | node ws | cspd / node |",
        "|---|---|---|---|",
        f"| echo 1 KiB, 64 connections: messages/s | {c['echo_messages_per_s']:,.0f} | {n['echo_messages_per_s']:,.0f} | "
        f"{c['echo_messages_per_s'] / n['echo_messages_per_s']:.2f} |",
        f"| echo: server CPU µs per message | {c['echo_cpu_us_per_message']:.2f} | {n['echo_cpu_us_per_message']:.2f} | "
        f"{c['echo_cpu_us_per_message'] / n['echo_cpu_us_per_message']:.2f} |",
        f"| fan-out to {args.clients:,}: ms until the last has it (median) | {c['fanout_ms_until_last']:.1f} | "
        f"{n['fanout_ms_until_last']:.1f} | {c['fanout_ms_until_last'] / n['fanout_ms_until_last']:.2f} |",
        f"| fan-out: server CPU µs per delivered message | {c['fanout_cpu_us_per_delivery']:.2f} | "
        f"{n['fanout_cpu_us_per_delivery']:.2f} | {c['fanout_cpu_us_per_delivery'] / n['fanout_cpu_us_per_delivery']:.2f} |",
        f"| idle WebSocket: bytes of RSS each | {c['idle_bytes_per_connection']:,.0f} | "
        f"{n['idle_bytes_per_connection']:,.0f} | {c['idle_bytes_per_connection'] / n['idle_bytes_per_connection']:.2f} |",
        f"| kernel floor: µs per small write to a loopback socket (C loop, CPU 0) | "
        f"{kernel['us_per_write_best']:.2f} | | |",
        f"| ... times {args.clients:,} subscribers on one CPU: ms | {kernel['us_per_write_best'] * args.clients / 1000:.1f} | | |",
        "",
        "cspd's fan-out runs with 2 workers (the topic crosses processes); Node's is one process.",
        "Both workers share CPU 0 (the client has CPU 1): a fan-out's time is bound below by the floor",
        "row times the subscribers, whatever the server does.",
    ]
    out = Path(args.out)
    (out / "ws.json").write_text(json.dumps({"summary": summary, "runs": results, "floor": kernel}, indent=1))
    (out / "ws.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
