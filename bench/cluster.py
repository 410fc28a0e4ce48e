#!/usr/bin/env python3
"""Topics across hosts (--cluster): publish -> delivery latency through Redis, and what a host receives
for a topic it has no subscriber to.

Starts its own redis-server (Debian's, a free port, --save "" --appendonly no) and three cspd hosts
(--workers 2, tests/handlers/topics.c as the only handler, --cluster redis://127.0.0.1:PORT), all on
127.0.0.1, nothing pinned: the 2 cores are shared by the 3 hosts (a master and 2 workers each),
Redis and the clients. Stops all of it at the end, on errors and on Ctrl-C.

1. Latency. SUBSCRIBERS WebSocket subscribers (one C process, bench/ws_subscribers.c, built with cc:
   epoll and raw frames) over TOPICS topics: subscriber i takes topic i % TOPICS, and the j-th of a
   topic (j = i // TOPICS) sits on host (topic + j) % 3, so every topic has subscribers on every
   host. Topic t is published by host t % 3: a paced publisher of topics.c (a thread in one worker,
   ?pub=t&rate=RATE/TOPICS&stamp=1) publishing "pH-t K NS" for SECONDS, NS being CLOCK_MONOTONIC
   when it called csp_publish; RATE messages a second in all. Why topics: RATE messages a second
   each fanned out to all SUBSCRIBERS would be RATE x SUBSCRIBERS deliveries a second (10 million
   with the defaults), which 2 cores cannot carry; TOPICS topics make RATE x SUBSCRIBERS / TOPICS
   (100,000 with the defaults). Before measuring, warm-ups are published until every subscriber
   has had one from another host (its host's subscription in Redis is in place). Latency = the
   time of the client's recv() that brought a message - NS, one clock: (a) "local", subscribers on
   the publisher's own host (the worker's fan-out and the relay to the other worker); (b) "remote",
   subscribers on the other hosts (worker -> master -> Redis -> the other host's master -> its
   workers). p50 and p99 of each, and what crossing hosts adds, (b) - (a), at p50 and p99 (target:
   under 5 ms at p99). Counted: every subscriber should get each of its publisher's messages, once,
   in order; the publishers' own counts (again, failed) and each host's /-/status "cluster".
2. Bytes. Host 2 is started again behind a TCP forwarder (Python, counting bytes both ways) to
   Redis. Subscribers: 2 on host 0 and 2 on host 1 to "quiet", 2 on host 2 to "busy". Counted on
   host 2's link: an idle window (its pings), hosts 0 and 1 publishing QUIET messages each to
   "quiet" (host 2 should receive nothing but its pings), and host 0 publishing QUIET to "busy"
   (what a message costs a host that does subscribe).

    python3 bench/cluster.py [--build build] [--rate 10000] [--subscribers 1000] [--topics 100]
                             [--seconds 15] [--quiet 5000] [--out bench/results]

About 45 s with the defaults; results in OUT/cluster.md and OUT/cluster.json.
"""
import argparse
import datetime
import http.client
import json
import os
import platform
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

from harness import ROOT, wait_for_port, work_folder
from bench import Server

HOSTS = 3
REDIS = "/usr/bin/redis-server"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(port, target, timeout=10):
    """(status, body) of one GET on a new connection (so that it may land on either worker)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("GET", target)
        answer = conn.getresponse()
        return answer.status, answer.read().decode()
    finally:
        conn.close()


class Process(Server):
    """A process by its command line, in a session of its own (bench.Server's CPU accounting)."""

    def __init__(self, name, port, work, argv):
        super().__init__(name, port, work, name)
        self.argv = argv

    def command(self):
        return self.argv

    def start(self):
        self.log = self.work / "log"
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(self.argv, stdout=log, stderr=log, stdin=subprocess.DEVNULL,
                                         cwd=self.work, start_new_session=True)
        wait_for_port(self.port)


class Host(Process):
    def __init__(self, index, port, work, cspd, handlers, workers, redis_port):
        self.index, self.cspd, self.handlers, self.workers = index, cspd, handlers, workers
        super().__init__(f"host{index}", port, work, [])
        self.point_at(redis_port)

    def point_at(self, redis_port):
        self.argv = [self.cspd, "--port", str(self.port), "--bind", "127.0.0.1", "--workers", str(self.workers),
                     "--handlers", str(self.handlers), "--cluster", f"redis://127.0.0.1:{redis_port}"]

    def start(self):
        super().start()
        deadline = time.time() + 10
        while time.time() < deadline:  # the handler is loaded: topics.c answers a bare GET with 400
            if get(self.port, "/csp/topics")[0] == 400:
                break
            time.sleep(0.1)
        else:
            raise RuntimeError(f"{self.name} does not serve /csp/topics; see {self.log}")
        deadline = time.time() + 10
        while self.cluster()["link"] != "connected":
            if time.time() > deadline:
                raise RuntimeError(f"{self.name}'s cluster link is {self.cluster()['link']}; see {self.log}")
            time.sleep(0.1)

    def status(self):
        return json.loads(get(self.port, "/-/status")[1])

    def cluster(self):
        return self.status()["cluster"]

    def publish(self, topic, tag, n, rate=0, stamp=1):
        """Starts a paced publisher (rate > 0; retried where the worker has no free slot) or publishes
        n at once from the loop; returns the answer."""
        target = f"/csp/topics?pub={topic}&tag={tag}&n={n}&stamp={stamp}" + (f"&rate={rate}" if rate else "")
        for _ in range(50):
            status, body = get(self.port, target)
            if status == 200:
                return body.strip()
            if status != 503:
                break
        raise RuntimeError(f"{self.name}: {target}: {status} {body!r}")

    def publisher(self, tag):
        """A paced publisher's state: it lives in one worker, the other says 404 (new connections)."""
        for _ in range(200):
            status, body = get(self.port, f"/csp/topics?done={tag}")
            if status == 200:
                return body.strip()
        return "not found"

    def problems(self):
        """The log's warnings and errors, but the one about running as root."""
        lines = self.log.read_text(errors="replace").splitlines() if self.log.exists() else []
        return [line for line in lines if re.search(r" (warning|error|critical) \[", line)
                and "started as root without --user" not in line]


class Forwarder:
    """127.0.0.1:port -> Redis, counting the bytes each way (all connections together)."""

    def __init__(self, redis_port):
        self.redis_port = redis_port
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(16)
        self.port = self.listener.getsockname()[1]
        self.lock = threading.Lock()
        self.bytes = {"to_redis": 0, "from_redis": 0}
        self.sockets = []
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self):
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self.redis_port))
            for s in (client, upstream):
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self.sockets += [client, upstream]
            threading.Thread(target=self.pump, args=(client, upstream, "to_redis"), daemon=True).start()
            threading.Thread(target=self.pump, args=(upstream, client, "from_redis"), daemon=True).start()

    def pump(self, source, sink, way):
        try:
            while data := source.recv(65536):
                sink.sendall(data)
                with self.lock:
                    self.bytes[way] += len(data)
        except OSError:
            pass
        for s in (source, sink):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def counts(self):
        with self.lock:
            return dict(self.bytes)

    def close(self):
        self.listener.close()
        for s in self.sockets:
            s.close()


class Subscribers:
    """bench/ws_subscribers.c: one process holding every subscriber; commands on its standard input."""

    def __init__(self, binary, work, name, spec):
        self.spec_file = work / f"{name}.spec"
        self.spec_file.write_text("".join(f"{g} {h} {p} {t} {e}\n" for g, h, p, t, e in spec))
        self.err = open(work / f"{name}.log", "wb")
        self.proc = subprocess.Popen([str(binary), str(self.spec_file)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self.err, text=True, start_new_session=True)
        first = self.proc.stdout.readline()
        if not first:
            raise RuntimeError(f"ws_subscribers could not connect; see {work / f'{name}.log'}")

    def ask(self, line):
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        answer = self.proc.stdout.readline()
        if not answer:
            raise RuntimeError("ws_subscribers stopped")
        return json.loads(answer)

    def cpu_ns(self):
        try:
            return sum(int((t / "schedstat").read_text().split()[0])
                       for t in Path(f"/proc/{self.proc.pid}/task").iterdir())
        except (FileNotFoundError, ProcessLookupError):
            return 0

    def stop(self):
        if self.proc.poll() is None:
            try:
                self.proc.stdin.write("quit\n")
                self.proc.stdin.flush()
                self.proc.wait(5)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()
        self.err.close()


def warm_up(hosts, subscribers, topic_hosts, seconds=30):
    """Publishes "wH K" to each topic from each of its hosts in turn until every subscriber has had
    one from a host other than its own."""
    deadline = time.time() + seconds
    k = 0
    while time.time() < deadline:
        status = subscribers.ask("status")
        if status["closed"]:
            raise RuntimeError(f"subscribers closed before the measure: {status['codes']}")
        if status["warm"] == status["of"]:
            return k
        for topic, publishers in topic_hosts.items():
            h = publishers[k % len(publishers)]
            hosts[h].publish(topic, f"w{h}", 1, stamp=0)
        k += 1
        time.sleep(0.05)
    raise RuntimeError(f"warm-up: only {subscribers.ask('status')['warm']} subscribers heard another host")


def wait_progress(subscribers, group, deadline):
    while time.time() < deadline:
        p = subscribers.ask(f"progress {group}")
        if p["done"] == p["of"]:
            return True
        time.sleep(0.1)
    return False


def latency_phase(args, hosts, redis, binary, work):
    rates = [args.rate // args.topics + (1 if t < args.rate % args.topics else 0) for t in range(args.topics)]
    counts = [int(r * args.seconds) for r in rates]
    spec = []
    for i in range(args.subscribers):
        t, j = i % args.topics, i // args.topics
        h = (t + j) % HOSTS
        spec.append((0, h, hosts[h].port, f"t{t}", counts[t]))
    subscribers = Subscribers(binary, work, "latency", spec)
    try:
        rounds = warm_up(hosts, subscribers, {f"t{t}": [(t + k) % HOSTS for k in range(HOSTS)]
                                              for t in range(args.topics)})
        before = {h.name: h.cluster() for h in hosts}
        cpu_before = {**{h.name: h.cpu_ns() for h in hosts}, "redis": redis.cpu_ns(), "client": subscribers.cpu_ns()}
        subscribers.ask("reset")
        began = time.time()
        for t in range(args.topics):
            h = t % HOSTS
            hosts[h].publish(f"t{t}", f"p{h}-{t}", counts[t], rate=rates[t])
        started_s = time.time() - began
        complete = wait_progress(subscribers, 0, began + args.seconds + args.settle)
        settled_s = time.time() - began
        cpu = {**{h.name: h.cpu_ns() for h in hosts}, "redis": redis.cpu_ns(), "client": subscribers.cpu_ns()}
        cpu = {name: (cpu[name] - cpu_before[name]) / 1e9 for name in cpu}
        report = subscribers.ask("report")
        status = subscribers.ask("status")
        publishers = {}
        for t in range(args.topics):
            h = t % HOSTS
            publishers[f"p{h}-{t}"] = hosts[h].publisher(f"p{h}-{t}")
        after = {h.name: h.cluster() for h in hosts}
    finally:
        subscribers.stop()
    return {"rates": sorted(set(rates)), "messages": sum(counts), "warm_up_rounds": rounds,
            "publishers_started_s": round(started_s, 3), "complete": complete, "settled_s": round(settled_s, 3),
            "cpu_s": cpu, "client": report, "closed": status["closed"], "close_codes": status["codes"],
            "publishers": publishers, "cluster_before": before, "cluster_after": after}


def bytes_phase(args, hosts, forwarder, binary, work):
    n = args.quiet
    spec = [(1, 0, hosts[0].port, "quiet", 2 * n), (1, 0, hosts[0].port, "quiet", 2 * n),
            (1, 1, hosts[1].port, "quiet", 2 * n), (1, 1, hosts[1].port, "quiet", 2 * n),
            (2, 2, hosts[2].port, "busy", n), (2, 2, hosts[2].port, "busy", n)]
    subscribers = Subscribers(binary, work, "bytes", spec)
    windows = {}
    try:
        warm_up(hosts, subscribers, {"quiet": [0, 1], "busy": [0]})
        time.sleep(1)

        def window(name, publish, group, seconds=None):
            start, t0 = forwarder.counts(), time.time()
            answers = publish()
            ok = True
            if group is not None:
                ok = wait_progress(subscribers, group, time.time() + 30)
                time.sleep(1)  # anything late counts too
            else:
                time.sleep(seconds)
            end = forwarder.counts()
            windows[name] = {"seconds": round(time.time() - t0, 3), "answers": answers, "all_delivered": ok,
                             **{way: end[way] - start[way] for way in end}}

        window("idle", lambda: [], None, 3)
        window("quiet", lambda: [hosts[h].publish("quiet", f"p{h}-q", n) for h in (0, 1)], 1)
        window("busy", lambda: [hosts[0].publish("busy", "p0-b", n)], 2)
        report = subscribers.ask("report")
    finally:
        subscribers.stop()
    return {"messages": n, "windows": windows, "groups": report["groups"]}


def summarise(args, latency, bytes_):
    c = latency["client"]
    local, remote = c["local"], c["remote"]
    group = c["groups"]["0"]
    publishers = latency["publishers"].values()
    again = sum(int(m.group(1)) for p in publishers if (m := re.search(r"again (\d+)", p)))
    failed = sum(int(m.group(1)) for p in publishers if (m := re.search(r"failed (\d+)", p)))
    unfinished = [tag for tag, p in latency["publishers"].items() if not p.startswith("published")]
    seconds = c["seconds"]
    spikes = [{"second": s, "local_max_ms": round(x[1] / 1e3, 2), "remote_max_ms": round(x[4] / 1e3, 2),
               "local_over_5ms": x[2], "remote_over_5ms": x[5]} for s, x in enumerate(seconds) if x[2] or x[5]]
    w = bytes_["windows"]
    idle_rate = w["idle"]["from_redis"] / w["idle"]["seconds"]
    return {
        "deliveries_per_s": args.rate * args.subscribers / args.topics,
        "local": local, "remote": remote,
        "added_p50_ms": (remote["p50_us"] - local["p50_us"]) / 1e3,
        "added_p99_ms": (remote["p99_us"] - local["p99_us"]) / 1e3,
        "received": group["received"], "expected": group["expected"], "missing": group["missing"],
        "duplicates": group["duplicates"], "disorder": group["disorder"], "complete_subscribers": group["complete"],
        "publish_again": again, "publish_failed": failed, "publishers_unfinished": unfinished,
        "client_us_per_frame": c["cpu_s"] * 1e6 / max(c["frames"], 1),
        "client_frames_per_recv": c["frames"] / max(c["recvs"], 1),
        "client_ceiling_per_s": c["frames"] / c["cpu_s"] if c["cpu_s"] else None,
        "seconds_over_5ms": spikes,
        "bytes_idle_from_redis_per_s": idle_rate,
        "bytes_quiet_from_redis": w["quiet"]["from_redis"],
        "bytes_quiet_from_redis_beyond_pings": w["quiet"]["from_redis"] - idle_rate * w["quiet"]["seconds"],
        "bytes_busy_from_redis_per_message": (w["busy"]["from_redis"] - idle_rate * w["busy"]["seconds"])
        / bytes_["messages"],
    }


def markdown(args, s, latency, bytes_, problems):
    ms = lambda us: f"{us / 1e3:.2f}"  # noqa: E731
    c = latency["client"]
    cpu = latency["cpu_s"]
    took = args.seconds
    w = bytes_["windows"]
    n = bytes_["messages"]
    lines = [
        f"`python3 bench/cluster.py --rate {args.rate} --subscribers {args.subscribers} --topics {args.topics} "
        f"--seconds {args.seconds:g} --quiet {args.quiet}` ({datetime.date.today()}, {os.cpu_count()} CPUs, "
        f"{platform.machine()}): one redis-server, 3 cspd hosts of {args.workers} workers, loopback, nothing pinned.",
        "",
        "**Caveat**: 2 cores carry everything: 3 hosts × 3 processes, Redis, the publishers' threads and the "
        "subscribers' client. The absolute numbers say more about this machine (which drifts, up to 2x within "
        "hours) than about cspd; the difference between local and remote delivery, in the same run, is the "
        "figure to read.",
        "",
        "## Publish → delivery on another host",
        "",
        f"{args.rate:,} messages/s in all for {took:g} s, published by {args.topics} paced publishers "
        f"(topics.c `?pub=tT&rate={'/'.join(map(str, latency['rates']))}&stamp=1`, each a thread in one worker; "
        f"topic t published by host t mod 3) to {args.subscribers:,} subscribers, {args.subscribers // args.topics} "
        f"a topic, each topic's spread over the 3 hosts ({(args.subscribers // args.topics + 2) // 3} on the "
        f"publisher's host at most). Why topics: {args.rate:,}/s fanned out to all {args.subscribers:,} would be "
        f"{args.rate * args.subscribers:,} deliveries/s, which 2 cores cannot carry (bench/results/ws.md: a loopback "
        f"write alone costs several µs here); {args.topics} topics make {s['deliveries_per_s']:,.0f} deliveries/s, "
        f"and every message still crosses Redis to the 2 other hosts.",
        "",
        "Latency = the subscriber's recv() time − the CLOCK_MONOTONIC stamp taken just before `csp_publish` "
        "(one machine, one clock), in ms:",
        "",
        "| delivery | messages | p50 | p90 | p99 | p99.9 | max |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, label in (("local", "(a) to subscribers on the publisher's host"),
                        ("remote", "(b) to subscribers on the other hosts (via Redis)")):
        h = s[name]
        lines.append(f"| {label} | {h['n']:,} | {ms(h['p50_us'])} | {ms(h['p90_us'])} | {ms(h['p99_us'])} | "
                     f"{ms(h['p999_us'])} | {ms(h['max_us'])} |")
    verdict = "met" if s["added_p99_ms"] < 5 else "NOT met"
    lost = "none lost" if not s["missing"] and not s["duplicates"] and not s["disorder"] else "SOME LOST OR OUT OF ORDER"
    lines += [
        "",
        f"- Crossing hosts adds {s['added_p50_ms']:.2f} ms at p50 and **{s['added_p99_ms']:.2f} ms at p99** "
        f"((b) − (a)); target: under 5 ms at p99: {verdict}.",
        f"- Counts: {s['received']:,} received of {s['expected']:,} expected ({lost}: missing {s['missing']}, "
        f"duplicates {s['duplicates']}, out of order {s['disorder']}); {s['complete_subscribers']:,} of "
        f"{args.subscribers:,} subscribers complete; {latency['closed']} closed; publishers: again "
        f"{s['publish_again']}, failed {s['publish_failed']}, unfinished {len(s['publishers_unfinished'])}.",
        f"- Seconds with a delivery over 5 ms: {len(s['seconds_over_5ms'])} of {len(c['seconds'])}"
        + (": " + ", ".join(f"s{x['second']} (local max {x['local_max_ms']} ms, remote max {x['remote_max_ms']} ms)"
                            for x in s["seconds_over_5ms"][:8]) if s["seconds_over_5ms"] else "") + ".",
        f"- CPU over the {latency['settled_s']:.1f} s of publishing: "
        + ", ".join(f"{name} {cpu[name]:.1f} s" for name in cpu)
        + f" (of {2 * latency['settled_s']:.1f} CPU-seconds).",
        "",
        f"The client: bench/ws_subscribers.c (one process, epoll, raw frames), chosen over Python asyncio "
        f"(tens of thousands of messages/s) and node's `ws` (a JS event per message). Here it used "
        f"{c['cpu_s']:.2f} CPU-s for {c['frames']:,} frames: {s['client_us_per_frame']:.2f} µs a frame, "
        f"{s['client_frames_per_recv']:.2f} frames a recv(); its ceiling at that rate of batching is about "
        f"{s['client_ceiling_per_s']:,.0f} frames/s on a whole core, {s['client_ceiling_per_s'] / s['deliveries_per_s']:.1f}x "
        f"what it had to read.",
        "",
        "## What a host receives for a topic it has no subscriber to",
        "",
        f"Host 2 restarted behind a TCP forwarder (Python) to Redis, counting bytes on its link (both of its "
        f"connections). Hosts 0 and 1 publish {n:,} messages each to `quiet` (2 subscribers on each of them, "
        f"none on host 2); then host 0 publishes {n:,} to `busy` (2 subscribers on host 2).",
        "",
        "| window | seconds | bytes Redis → host 2 | bytes host 2 → Redis | delivered |",
        "|---|---:|---:|---:|---|",
    ]
    for name, label in (("idle", "idle (pings only)"), ("quiet", f"`quiet`: {2 * n:,} messages, none for host 2"),
                        ("busy", f"`busy`: {n:,} messages, host 2 subscribes")):
        x = w[name]
        lines.append(f"| {label} | {x['seconds']:.1f} | {x['from_redis']:,} | {x['to_redis']:,} | "
                     f"{'all' if x['all_delivered'] else 'NOT ALL'} |")
    lines += [
        "",
        f"- For `quiet`, host 2 received {s['bytes_quiet_from_redis']:,} bytes; its pings alone bring "
        f"{s['bytes_idle_from_redis_per_s']:.0f} bytes/s, so {s['bytes_quiet_from_redis_beyond_pings']:.0f} beyond "
        f"them: {s['bytes_quiet_from_redis_beyond_pings'] / (2 * n):.3f} bytes per message published elsewhere.",
        f"- For `busy`, a subscribed host receives about {s['bytes_busy_from_redis_per_message']:.0f} bytes per "
        f"message from Redis.",
        "",
        "## The hosts' logs",
        "",
    ]
    if problems:
        lines += [f"Warnings and errors (not counting \"started as root without --user\"): {len(problems)}", ""]
        lines += ["```"] + [line[:200] for line in problems[:20]] + ["```"]
    else:
        lines.append("No warnings or errors (but \"started as root without --user\").")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0].replace("\n", " "),
                                     epilog=__doc__.split("\n\n", 1)[1], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", type=Path, default=ROOT / "build",
                        help="a build folder with cspd and test-handlers/topics.so (default: build)")
    parser.add_argument("--rate", type=int, default=10000, help="messages a second published in all (10,000)")
    parser.add_argument("--subscribers", type=int, default=1000, help="WebSocket subscribers (1,000)")
    parser.add_argument("--topics", type=int, default=100,
                        help="topics the subscribers are spread over, each with its paced publisher (100: at most "
                             "about 60 a host, topics.c keeps 32 per worker)")
    parser.add_argument("--seconds", type=float, default=15, help="of publishing (15)")
    parser.add_argument("--settle", type=float, default=10, help="s after publishing to wait for stragglers (10)")
    parser.add_argument("--workers", type=int, default=2, help="worker processes per host (2)")
    parser.add_argument("--quiet", type=int, default=5000, help="messages each host publishes in the bytes test")
    parser.add_argument("--out", default=str(ROOT / "bench" / "results"),
                        help="a folder for cluster.md and cluster.json (default bench/results; '' for none)")
    args = parser.parse_args()
    if args.topics > 60 * HOSTS or args.subscribers < HOSTS * args.topics or args.rate < args.topics:
        parser.error("--topics at most 180, at least 3 subscribers and 1 message/s per topic")

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # a kill runs the cleanup below too
    work = work_folder("cspd-cluster-bench-")
    handlers = work / "handlers"
    handlers.mkdir()
    shutil.copy(args.build / "test-handlers/topics.so", handlers / "topics.so")
    os.chmod(handlers / "topics.so", 0o755)
    binary = work / "ws_subscribers"
    subprocess.run(["cc", "-O2", "-o", str(binary), str(ROOT / "bench/ws_subscribers.c")], check=True)
    cspd = str((args.build / "cspd").resolve())

    redis_port = free_port()
    redis = Process("redis", redis_port, work, [REDIS, "--bind", "127.0.0.1", "--port", str(redis_port), "--save", "",
                                                "--appendonly", "no", "--dir", str(work), "--daemonize", "no",
                                                "--protected-mode", "no"])
    hosts = [Host(i, free_port(), work, cspd, handlers, args.workers, redis_port) for i in range(HOSTS)]
    forwarder = None
    problems = []
    try:
        redis.start()
        for h in hosts:
            h.start()
        print(f"latency: {args.rate:,} messages/s, {args.subscribers:,} subscribers, {args.topics} topics, "
              f"{args.seconds:g} s ...", flush=True)
        latency = latency_phase(args, hosts, redis, binary, work)
        problems += [f"host{h.index}: {line}" for h in hosts for line in h.problems()]
        print("bytes: host 2 behind a forwarder ...", flush=True)
        hosts[2].stop()
        forwarder = Forwarder(redis_port)
        hosts[2].point_at(forwarder.port)
        hosts[2].log.rename(hosts[2].work / "log.latency")
        hosts[2].start()
        bytes_ = bytes_phase(args, hosts, forwarder, binary, work)
        problems += [f"host{h.index}: {line}" for h in hosts for line in h.problems()
                     if f"host{h.index}: {line}" not in problems]
    except BaseException:
        print(f"failed: the logs stay in {work}", file=sys.stderr)
        raise
    finally:
        for h in hosts:
            h.stop()
        redis.stop()
        if forwarder:
            forwarder.close()

    s = summarise(args, latency, bytes_)
    text = markdown(args, s, latency, bytes_, problems)
    print(text)
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "cluster.json").write_text(json.dumps(
            {"args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()}, "summary": s,
             "latency": latency, "bytes": bytes_, "log_problems": problems}, indent=1) + "\n")
        (out / "cluster.md").write_text("# bench/cluster.py: topics across hosts (--cluster)\n\n" + text + "\n")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
