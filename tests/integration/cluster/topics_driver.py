#!/usr/bin/env python3
"""Drives topics across hosts (--cluster) from the outside, with real WebSocket clients
(python3-websockets), for tests/integration/cluster_test.cpp and bench/cluster.py.

  topics_driver.py --hosts P1,P2,P3 --clients N --topic T MODE [options]

Clients are spread over the hosts in turn (client i on host i % hosts), each subscribed to T
through /csp/topics (tests/handlers/topics.c); every other one hears gaps (?gap=1), the others
are closed with 1012 when a gap is said. Before anything is measured, each host publishes warm-up
messages until every client has one from every host: then every subscription is in place.

MODE burst --count C: each host publishes C messages at once ("h<host> 0" ... "h<host> C-1").
MODE paced --rate R --seconds S: each host publishes R a second for S seconds from a thread of
  its own; --started-file F is written once publishing has begun (a test cuts links from there).

Then it waits (up to --settle seconds after the publishers are done) until every client has all,
and prints one JSON object: per client its host, whether it hears gaps, what it got (count,
duplicates, out of order, missing), the gaps it was told, how it closed, and whether it is complete
(every publisher's messages, each once and in order); and the publishers' own counts.
"""
import argparse
import asyncio
import json
import sys
import time
import urllib.error
import urllib.request

import websockets


def get(port, target, timeout=10):
    with urllib.request.urlopen("http://127.0.0.1:%d%s" % (port, target), timeout=timeout) as answer:
        return answer.read().decode()


def publisher_state(port, tag):
    """The paced publisher's state: it lives in one worker of the host, so other workers say 404."""
    for _ in range(200):
        try:
            return get(port, "/csp/topics?done=%s" % tag).strip()
        except urllib.error.HTTPError as error:
            if error.code != 404:
                raise
    return "not found"


class Client:
    def __init__(self, index, port, hears_gaps, topic):
        self.index, self.port, self.hears_gaps, self.topic = index, port, hears_gaps, topic
        self.last = {}        # publisher tag -> last number
        self.count = 0
        self.duplicates = 0
        self.disorder = 0     # a number past the next one expected, with no gap told before it
        self.skipped = 0      # numbers jumped over after a gap was told (allowed: they were lost)
        self.gaps = 0
        self.gaps_before = {}  # publisher tag -> gaps told before its last message
        self.warm = set()
        self.close_code = None
        self.connected = asyncio.Event()

    async def run(self):
        url = "ws://127.0.0.1:%d/csp/topics?sub=%s%s" % (self.port, self.topic, "&gap=1" if self.hears_gaps else "")
        try:
            async with websockets.connect(url, max_size=None, ping_interval=None, open_timeout=10) as ws:
                self.connected.set()
                async for message in ws:
                    self.take(message if isinstance(message, str) else message.decode())
        except websockets.ConnectionClosed as closed:
            self.close_code = closed.code
        except Exception as error:  # noqa: BLE001 -- reported, not hidden
            self.close_code = "error: %s" % error
        finally:
            self.connected.set()
            if self.close_code is None:
                self.close_code = ws.close_code if "ws" in locals() else "never opened"

    def take(self, text):
        if text.startswith("gap "):
            self.gaps += 1
            return
        tag, _, rest = text.partition(" ")
        number = int(rest.split(".", 1)[0].split(" ", 1)[0])
        if tag.startswith("w"):
            self.warm.add(tag)
            return
        self.count += 1
        last = self.last.get(tag, -1)
        if number <= last:
            self.duplicates += 1
            return
        if number != last + 1:
            # Each publisher's messages may jump once a gap was told since its last one.
            if self.gaps > self.gaps_before.get(tag, 0):
                self.skipped += number - last - 1
            else:
                self.disorder += 1
        self.last[tag] = number
        self.gaps_before[tag] = self.gaps

    def has_all(self, tags, count):
        return all(self.last.get(tag, -1) == count - 1 for tag in tags)


async def warm_up(clients, ports, loop, deadline):
    tags = {"w%d" % h for h in range(len(ports))}
    k = 0
    while time.monotonic() < deadline:
        if all(c.warm >= tags for c in clients if c.close_code is None):
            return True
        for h, port in enumerate(ports):
            await loop.run_in_executor(None, get, port, "/csp/topics?pub=%s&tag=w%d&n=1&from=%d" % (clients[0].topic, h, k))
        k += 1
        await asyncio.sleep(0.1)
    return False


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--hosts", required=True)
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--topic", default="room")
    parser.add_argument("--settle", type=float, default=20.0)
    parser.add_argument("--pad", type=int, default=0)
    sub = parser.add_subparsers(dest="mode", required=True)
    burst = sub.add_parser("burst")
    burst.add_argument("--count", type=int, default=1000)
    paced = sub.add_parser("paced")
    paced.add_argument("--rate", type=int, default=200)
    paced.add_argument("--seconds", type=float, default=5.0)
    paced.add_argument("--started-file")
    args = parser.parse_args()
    ports = [int(p) for p in args.hosts.split(",")]
    loop = asyncio.get_running_loop()

    clients = [Client(i, ports[i % len(ports)], i % 2 == 0, args.topic) for i in range(args.clients)]
    tasks = [asyncio.create_task(c.run()) for c in clients]
    await asyncio.wait_for(asyncio.gather(*(c.connected.wait() for c in clients)), 15)
    warmed = await warm_up(clients, ports, loop, time.monotonic() + 30)

    tags = ["h%d" % h for h in range(len(ports))]
    publishers = {}
    began = time.monotonic()
    if args.mode == "burst":
        count = args.count
        for h, port in enumerate(ports):
            publishers[tags[h]] = await loop.run_in_executor(
                None, get, port, "/csp/topics?pub=%s&tag=%s&n=%d&pad=%d" % (args.topic, tags[h], count, args.pad))
    else:
        count = int(args.rate * args.seconds)
        for h, port in enumerate(ports):
            await loop.run_in_executor(None, get, port, "/csp/topics?pub=%s&tag=%s&n=%d&rate=%d&pad=%d" % (
                args.topic, tags[h], count, args.rate, args.pad))
        if args.started_file:
            with open(args.started_file, "w") as f:
                f.write("started\n")
        while True:
            states = {tags[h]: await loop.run_in_executor(None, publisher_state, port, tags[h])
                      for h, port in enumerate(ports)}
            if all(s.startswith("published") for s in states.values()):
                publishers = states
                break
            await asyncio.sleep(0.2)
    published_at = time.monotonic()
    deadline = published_at + args.settle
    while time.monotonic() < deadline:
        if all(c.has_all(tags, count) or c.close_code is not None for c in clients):
            break
        await asyncio.sleep(0.1)
    settled = time.monotonic()
    for t in tasks:
        t.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)

    report = {
        "warmed": warmed,
        "count": count,
        "publish_seconds": round(published_at - began, 3),
        "settle_seconds": round(settled - published_at, 3),
        "publishers": publishers,
        "clients": [{
            "host": c.index % len(ports), "hears_gaps": c.hears_gaps, "received": c.count,
            "duplicates": c.duplicates, "disorder": c.disorder, "skipped": c.skipped, "gaps": c.gaps,
            "close": c.close_code if not isinstance(c.close_code, int) or c.close_code != 1000 else None,
            "last": c.last, "complete": c.has_all(tags, count) and c.duplicates == 0 and c.disorder == 0,
        } for c in clients],
    }
    print(json.dumps(report))


if __name__ == "__main__":
    asyncio.run(main())
