#!/usr/bin/env python3
"""Life-cycle scenarios with open WebSockets, driven by websocket_test.cpp, built on ws_frames.py's
raw-frame client. Each prints "ok: ..." and exits 0, or prints what went wrong and exits 1.

  ws_scenarios.py reload PORT NEW_SO TARGET   a conversation open on version 1 keeps talking to it
                                              after NEW_SO (version 2) is renamed over TARGET;
                                              new ones get version 2
  ws_scenarios.py drain PORT PID              SIGTERM to PID: every open WebSocket hears close 1001
  ws_scenarios.py hold PORT COUNT SECONDS     COUNT idle WebSockets held open SECONDS, then each echoes
  ws_scenarios.py crash PORT [COMMAND]        "crash" (or COMMAND, e.g. "hang") in on_message: the
                                              connection dies
  ws_scenarios.py extensions PORT             prints the extensions a deflate offer is answered with
  ws_scenarios.py blocking PORT               a blocking handler (ws_blocking) accepts from its pool
                                              thread: what it sent in its call, then what the client
                                              sent meanwhile; a client gone during the call is
                                              told to the handler as 1006; a refusal is a 403
  ws_scenarios.py workers PORT                subscribers on two workers all hear what one publishes,
                                              in order, big messages (in pieces) included
With --h2 (Debian's /usr/bin/python3, python3-h2), each conversation is on an HTTP/2 stream of its
own connection (RFC 8441).
"""
import argparse
import base64
import hashlib
import os
import re
import shutil
import signal
import struct
import sys
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ws_frames  # noqa: E402
from ws_frames import BINARY, CLOSE, TEXT, Conn, Closed  # noqa: E402


def version_of(conn):
    conn.send(TEXT, "version")
    op, data = conn.message()
    return data.decode()


def reload(args):
    old = Conn()
    assert version_of(old) == "version 1", "before: %s" % version_of(old)
    staged = args.target + ".new"
    shutil.copyfile(args.new_so, staged)
    os.rename(staged, args.target)
    deadline = time.time() + 10
    while True:
        fresh = Conn()
        if version_of(fresh) == "version 2":
            break
        fresh.close()
        if time.time() > deadline:
            raise AssertionError("version 2 never answered")
        time.sleep(0.1)
    assert version_of(old) == "version 1", "the open conversation moved to %s" % version_of(old)
    old.send(TEXT, "still here")
    assert old.message() == (TEXT, b"still here")
    old.send(CLOSE, struct.pack(">H", 1000))
    old.expect_eof()
    fresh.close()
    return "the open conversation stayed on version 1; new ones got version 2"


def drain(args):
    conns = [Conn("/csp/ws_echo") for _ in range(3)]
    for c in conns:
        c.send(TEXT, "hi")
        assert c.message() == (TEXT, b"hi")
    os.kill(args.pid, signal.SIGTERM)
    for c in conns:
        reason = c.expect_close(1001, timeout=10)
        assert reason == b"server stopping", reason
    if args.h2:
        # Each connection heard a GOAWAY without an error, and its stream finished after it.
        assert all(c.sock.goaway and c.sock.goaway.error_code == 0 for c in conns), "no GOAWAY NO_ERROR"
        return "3 WebSockets on HTTP/2 streams: GOAWAY, then 1001 'server stopping', answered"
    return "3 WebSockets closed 1001 'server stopping' and answered"


def hold(args):
    conns = []
    for i in range(args.count):
        conns.append(Conn("/csp/ws_echo"))
    time.sleep(args.seconds)
    for i, c in enumerate(conns):
        c.send(TEXT, "c%d" % i)
    for i, c in enumerate(conns):
        assert c.message(10) == (TEXT, ("c%d" % i).encode()), "connection %d" % i
    for c in conns:
        c.close()
    return "%d WebSockets held open, each echoed afterwards" % args.count


def crash(args):
    bystander = Conn("/csp/ws_echo")
    victim = Conn()
    victim.send(TEXT, args.rest[0] if args.rest else "crash")
    try:
        victim.recv(10)
        raise AssertionError("the crashing conversation went on")
    except (Closed, ConnectionResetError):
        pass
    return "the crashing conversation was cut"


def workers(args):
    by_pid = {}
    conns = []
    deadline = time.time() + 10
    while len(by_pid) < 2 or len(conns) < 6:
        c = Conn()
        c.send(TEXT, "pid")
        pid = c.message()[1].decode()
        by_pid.setdefault(pid, []).append(c)
        conns.append(c)
        if time.time() > deadline:
            raise AssertionError("every connection landed on one worker: %s" % list(by_pid))
    for c in conns:
        c.send(TEXT, "sub lobby")
        assert c.message() == (TEXT, b"subscribed lobby")
    # Which worker publishes does not matter: take one of each in turn.
    publishers = [group[0] for group in by_pid.values()]
    sent = []
    for i in range(30):
        text = "m%d" % i
        publishers[i % len(publishers)].send(TEXT, "pub lobby " + text)
        sent.append(text)
    publishers[-1].send(TEXT, "pubbig lobby 60000")  # past one datagram: carried in pieces
    for c in conns:
        got, big = [], None
        while len(got) < len(sent) or big is None:
            op, data = c.message(10)
            if op == BINARY:
                big = data
            elif not data.startswith(b"published"):
                got.append(data.decode())
        assert big == b"B" * 60000, "the big message came as %d bytes" % len(big)
        # Each publisher's messages in its order (two publishers interleave freely).
        for p in range(len(publishers)):
            mine = [m for m in sent[:30] if int(m[1:]) % len(publishers) == p]
            heard = [m for m in got if m in mine]
            assert heard == mine, "out of order from publisher %d: %s" % (p, heard)
    for c in conns:
        c.close()
    return "%d subscribers on %d workers heard all 31 messages in each publisher's order" % (len(conns), len(by_pid))


def extensions(args):
    c = Conn("/csp/ws_echo", extra=[("Sec-WebSocket-Extensions", "permessage-deflate; client_max_window_bits")])
    c.close()
    return (c.fields.get("sec-websocket-extensions") or ["none"])[0]


def opened_with(path, first):
    """A conversation whose first frame goes right behind the handshake, before any answer."""
    c = Conn.__new__(Conn)
    c.pings, c.buf = "answer", b""
    early = c.frame(TEXT, first)
    if ws_frames.ARGS.h2:
        class Early(ws_frames.H2Tunnel):
            def open(self, path, extra=(), websocket=True):
                stream = ws_frames.H2Tunnel.open(self, path, extra, websocket)
                self.conn.send_data(stream, early)  # DATA right behind the HEADERS
                self.sock.sendall(self.conn.data_to_send())
                return stream
        c.sock = Early(path)
        c.status, c.fields = c.sock.status, c.sock.fields
        return c
    c.sock = ws_frames.connect()
    key = base64.b64encode(os.urandom(16)).decode()
    c.sock.sendall(ws_frames.request(path, [("Upgrade", "websocket"), ("Connection", "Upgrade"),
                                            ("Sec-WebSocket-Key", key), ("Sec-WebSocket-Version", "13")]) + early)
    c.status, c.fields, c.buf = ws_frames.read_head(c.sock)
    accept = base64.b64encode(hashlib.sha1(key.encode() + ws_frames.GUID).digest()).decode()
    assert c.fields.get("sec-websocket-accept") == [accept], c.fields
    return c


def left_during_the_call(path, until):
    """Asks for a WebSocket and goes before the answer, once until() is true (the call is running)."""
    deadline = time.time() + 5
    if not ws_frames.ARGS.h2:
        sock = ws_frames.connect()
        key = base64.b64encode(os.urandom(16)).decode()
        sock.sendall(ws_frames.request(path, [("Upgrade", "websocket"), ("Connection", "Upgrade"),
                                              ("Sec-WebSocket-Key", key), ("Sec-WebSocket-Version", "13")]))
        while not until() and time.time() < deadline:
            time.sleep(0.02)
        sock.close()
        return

    class Leaving(ws_frames.H2Tunnel):
        def answer(self, stream):
            while not until() and time.time() < deadline:
                time.sleep(0.02)
            self.sock.close()
            return None, {}
    Leaving(path)


def closes(port):
    """ws_blocking's counts in this worker: (accepted, closed, last code, refused, waited)."""
    with urllib.request.urlopen("http://127.0.0.1:%d/csp/ws_blocking?closes" % port, timeout=5) as answer:
        m = re.fullmatch(r"accepted (\d+) closed (\d+) last (-?\d+) refused (\d+) waited (\d+)", answer.read().decode())
    assert m, "?closes answered something else"
    return tuple(int(n) for n in m.groups())


def wait_for_counts(port, condition):
    deadline = time.time() + 5
    while not condition(closes(port)) and time.time() < deadline:
        time.sleep(0.05)
    return closes(port)


def blocking(args):
    accepted = 200 if args.h2 else 101
    # The call sleeps 300 ms, then accepts and sends 602 messages (600 KiB: past the high-water mark,
    # which a sender that waited for room would never pass before the 101 went).
    c = opened_with("/csp/ws_blocking?wait=300&burst=600", "early")
    assert c.status == accepted, c.status
    assert c.fields.get("set-cookie") == ["blocking=1; Path=/"], c.fields
    assert c.message() == (TEXT, b"from the call")
    for i in range(600):
        op, data = c.message()
        assert op == BINARY and len(data) == 1024 and int.from_bytes(data[:4], "little") == i, \
            "message %d: %d bytes numbered %d" % (i, len(data), int.from_bytes(data[:4], "little"))
    op, data = c.message()
    m = re.fullmatch(rb"burst 600 again (\d+)", data)
    assert op == TEXT and m and int(m.group(1)) > 0, data
    assert c.message() == (TEXT, b"early"), "the frame sent during the call"
    c.send(TEXT, "and after")
    assert c.message() == (TEXT, b"and after")
    before = closes(args.port)
    c.send(CLOSE, struct.pack(">H", 1000))
    c.expect_eof()
    after = wait_for_counts(args.port, lambda now: now[1] > before[1])
    assert after[1:3] == (before[1] + 1, 1000), (before, after)

    # Gone after the handler accepted (it lingers 600 ms in its call), before the call returned: it
    # hears on_close 1006 once the call is over.
    left_during_the_call("/csp/ws_blocking?linger=600", lambda: closes(args.port)[0] > after[0])
    gone = wait_for_counts(args.port, lambda now: now[1] > after[1])
    assert gone[:3] == (after[0] + 1, after[1] + 1, 1006), (after, gone)
    # Gone while the call still waited to accept (800 ms): csp_ws_accept says NULL, nothing begins.
    left_during_the_call("/csp/ws_blocking?wait=800", lambda: closes(args.port)[4] > gone[4])
    refused = wait_for_counts(args.port, lambda now: now[3] > gone[3])
    assert refused[:4] == gone[:3] + (gone[3] + 1,), (gone, refused)

    if args.h2:
        t = ws_frames.H2Tunnel("/csp/ws_blocking?deny")
        status = t.status
        t.close()
    else:
        status = ws_frames.handshake_answer("/csp/ws_blocking?deny")[0]
    assert status == 403, status
    again = int(m.group(1))
    return "%d, the call's 602 messages (%d said CSP_AGAIN) then the early frame; a client gone in the call: " \
        "on_close 1006 (gone before the accept: NULL); ?deny: 403" % (accepted, again)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("scenario")
    parser.add_argument("port", type=int)
    parser.add_argument("rest", nargs="*")
    parser.add_argument("--h2", action="store_true", help="each conversation on an HTTP/2 stream (RFC 8441)")
    args = parser.parse_args()
    ws_frames.ARGS = argparse.Namespace(port=args.port, tls=False, h2=args.h2)
    if args.scenario == "reload":
        args.new_so, args.target = args.rest
    elif args.scenario == "drain":
        args.pid = int(args.rest[0])
    elif args.scenario == "hold":
        args.count, args.seconds = int(args.rest[0]), float(args.rest[1])
    try:
        print("ok: " + {"reload": reload, "drain": drain, "hold": hold, "crash": crash,
                        "workers": workers, "extensions": extensions, "blocking": blocking}[args.scenario](args))
    except Exception as e:  # noqa: BLE001
        print("failed: %s: %s" % (type(e).__name__, e))
        sys.exit(1)


if __name__ == "__main__":
    main()
