#!/usr/bin/env python3
"""cspd's own HTTP/2 conformance and attack cases, in raw frames (Python's hpack for header
blocks, everything else by hand), organised by RFC 9113's sections. Each case states the
answer the RFC requires and checks the server gives it.

Usage: h2_frames.py PORT [--only PREFIX] [--tls]  (the server runs with --h2-max-streams 8,
--max-header-size 8192, --max-body 1048576). Prints one JSON object: {case: {"ok", "detail"}}.
Attack cases (prefix "attack.") also check that the connection is cut with the expected
GOAWAY within a bounded number of frames."""
import argparse
import json
import socket
import ssl
import struct
import sys
import time

import hpack

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
DATA, HEADERS, PRIORITY, RST_STREAM, SETTINGS, PUSH_PROMISE, PING, GOAWAY, WINDOW_UPDATE, CONTINUATION = range(10)
END_STREAM, ACK, END_HEADERS, PADDED, PRIORITY_FLAG = 0x1, 0x1, 0x4, 0x8, 0x20
ERRORS = ["NO_ERROR", "PROTOCOL_ERROR", "INTERNAL_ERROR", "FLOW_CONTROL_ERROR", "SETTINGS_TIMEOUT",
          "STREAM_CLOSED", "FRAME_SIZE_ERROR", "REFUSED_STREAM", "CANCEL", "COMPRESSION_ERROR",
          "CONNECT_ERROR", "ENHANCE_YOUR_CALM", "INADEQUATE_SECURITY", "HTTP_1_1_REQUIRED"]
S_HEADER_TABLE_SIZE, S_ENABLE_PUSH, S_MAX_CONCURRENT_STREAMS, S_INITIAL_WINDOW_SIZE, S_MAX_FRAME_SIZE, \
    S_MAX_HEADER_LIST_SIZE = range(1, 7)

ARGS = None


def frame(kind, flags, stream, payload=b""):
    return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + struct.pack(">I", stream) + payload


def settings(*pairs, ack=False):
    return frame(SETTINGS, ACK if ack else 0, 0, b"".join(struct.pack(">HI", k, v) for k, v in pairs))


class Conn:
    """One client connection: frames out, frames in (with a timeout)."""

    def __init__(self, preface=True, initial_settings=()):
        raw = socket.create_connection(("127.0.0.1", ARGS.port), timeout=5)
        raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if ARGS.tls:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
            ctx.set_alpn_protocols(["h2"])
            raw = ctx.wrap_socket(raw, server_hostname="localhost")
            assert raw.selected_alpn_protocol() == "h2", "ALPN did not choose h2"
        self.sock = raw
        self.buf = b""
        self.encoder = hpack.Encoder()
        self.decoder = hpack.Decoder()
        self.decoder.max_allowed_table_size = 65536
        self.closed = False
        self.server_settings = {}
        if preface:
            self.send(PREFACE + settings(*initial_settings))

    def send(self, data):
        try:
            self.sock.sendall(data)
            return True
        except OSError:
            self.closed = True
            return False

    def headers_block(self, fields):
        return self.encoder.encode(fields)

    def request(self, stream, path="/csp/hello", method="GET", extra=(), end_stream=True, fields=None):
        if fields is None:
            fields = [(":method", method), (":scheme", "https" if ARGS.tls else "http"), (":path", path),
                      (":authority", "localhost")] + list(extra)
        return frame(HEADERS, END_HEADERS | (END_STREAM if end_stream else 0), stream, self.headers_block(fields))

    def read_frame(self, timeout=3.0):
        """The next frame (kind, flags, stream, payload), or None on timeout / close."""
        deadline = time.time() + timeout
        while len(self.buf) < 9 or len(self.buf) < 9 + int.from_bytes(self.buf[:3], "big"):
            left = deadline - time.time()
            if left <= 0 and timeout > 0:
                return None
            self.sock.settimeout(max(left, 0.0001))
            try:
                chunk = self.sock.recv(65536)
            except (socket.timeout, ssl.SSLError, TimeoutError, BlockingIOError):
                return None
            except OSError:
                self.closed = True
                return None
            if not chunk:
                self.closed = True
                return None
            self.buf += chunk
        length = int.from_bytes(self.buf[:3], "big")
        kind, flags = self.buf[3], self.buf[4]
        stream = struct.unpack(">I", self.buf[5:9])[0] & 0x7FFFFFFF
        payload = self.buf[9:9 + length]
        self.buf = self.buf[9 + length:]
        if kind == SETTINGS and not flags & ACK:
            for i in range(0, len(payload), 6):
                k, v = struct.unpack(">HI", payload[i:i + 6])
                self.server_settings[k] = v
            self.send(settings(ack=True))
        return kind, flags, stream, payload

    def wait_for(self, want, timeout=3.0):
        """Frames until `want(frame)` is true: that frame, or None (timeout, close)."""
        deadline = time.time() + timeout
        while True:
            f = self.read_frame(max(0.0, deadline - time.time()))
            if f is None:
                return None
            if want(f):
                return f

    def goaway(self, timeout=3.0):
        f = self.wait_for(lambda f: f[0] == GOAWAY, timeout)
        if f is None:
            return None
        return ERRORS[struct.unpack(">I", f[3][4:8])[0]] if struct.unpack(">I", f[3][4:8])[0] < len(ERRORS) else "?"

    def reset_of(self, stream, timeout=3.0):
        f = self.wait_for(lambda f: (f[0] == RST_STREAM and f[2] == stream) or f[0] == GOAWAY, timeout)
        if f is None:
            return None
        code = struct.unpack(">I", f[3][:4] if f[0] == RST_STREAM else f[3][4:8])[0]
        return ("RST " if f[0] == RST_STREAM else "GOAWAY ") + (ERRORS[code] if code < len(ERRORS) else "?")

    def response(self, stream, timeout=5.0):
        """(status, headers, body) of `stream`, or (None, reason) on a reset/GOAWAY/timeout."""
        headers, body, status = [], b"", None
        deadline = time.time() + timeout
        while True:
            f = self.read_frame(max(0.0, deadline - time.time()))
            if f is None:
                return None, "no answer", body
            kind, flags, sid, payload = f
            if kind == GOAWAY:
                return None, "GOAWAY " + ERRORS[struct.unpack(">I", payload[4:8])[0]], body
            if sid != stream:
                continue
            if kind == RST_STREAM:
                return None, "RST " + ERRORS[struct.unpack(">I", payload[:4])[0]], body
            if kind == HEADERS:
                block = payload
                if flags & PADDED:
                    block = block[1:len(block) - block[0]]
                if flags & PRIORITY_FLAG:
                    block = block[5:]
                for name, value in self.decoder.decode(block):
                    if name == ":status":
                        status = int(value)
                    headers.append((name, value))
            elif kind == DATA:
                body += payload
                if payload:
                    self.send(frame(WINDOW_UPDATE, 0, 0, struct.pack(">I", len(payload))) +
                              frame(WINDOW_UPDATE, 0, stream, struct.pack(">I", len(payload))))
            if flags & END_STREAM:
                return status, headers, body

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


CASES = {}


def stalled_connections(count, streams, path):
    """`count` connections that set every stream's window to 0 and ask for `path` on `streams`
    streams each, as an attacker holding a server's memory does (stall_streams.py, hold_answers.py)."""
    conns = []
    for _ in range(count):
        c = Conn(initial_settings=[(S_INITIAL_WINDOW_SIZE, 0)])
        c.send(b"".join(c.request(2 * i + 1, path=path) for i in range(streams)))
        conns.append(c)
    return conns


def case(name):
    def register(fn):
        CASES[name] = fn
        return fn
    return register


def expect(cond, detail):
    return bool(cond), detail


# --- 3.4 The connection preface ------------------------------------------------------------

@case("3.4.server-sends-settings-first")
def _():
    c = Conn()
    f = c.read_frame()
    return expect(f and f[0] == SETTINGS and not f[1] & ACK, "first frame %r" % (f and f[0]))


@case("3.4.settings-advertise-limits")
def _():
    c = Conn()
    c.wait_for(lambda f: f[0] == SETTINGS and not f[1] & ACK)
    s = c.server_settings
    return expect(s.get(S_MAX_CONCURRENT_STREAMS) == 8 and s.get(S_MAX_HEADER_LIST_SIZE) == 8192,
                  "settings %r" % s)


@case("3.4.bad-preface-is-a-connection-error")
def _():
    c = Conn(preface=False)
    c.send(b"PRI * HTTP/2.0\r\n\r\nXX\r\n\r\n" + settings())
    code = c.goaway()
    # RFC 9113 §3.4: an invalid preface is a connection error of type PROTOCOL_ERROR (a GOAWAY may be omitted).
    return expect(code == "PROTOCOL_ERROR" or (code is None and c.closed), "GOAWAY %r closed %r" % (code, c.closed))


@case("3.4.first-frame-must-be-settings")
def _():
    c = Conn(preface=False)
    c.send(PREFACE + frame(PING, 0, 0, b"\0" * 8))
    code = c.goaway()
    return expect(code == "PROTOCOL_ERROR", "GOAWAY %r" % code)


# --- 4.1/4.2 Frame format and size ----------------------------------------------------------

@case("4.2.data-over-max-frame-size")
def _():
    c = Conn()
    c.send(c.request(1, method="POST", end_stream=False) + frame(DATA, 0, 1, b"x" * 16385))
    code = c.goaway()
    return expect(code == "FRAME_SIZE_ERROR", "GOAWAY %r" % code)


@case("4.2.settings-with-bad-length")
def _():
    c = Conn()
    c.send(frame(SETTINGS, 0, 0, b"\0\0\0"))
    code = c.goaway()
    return expect(code == "FRAME_SIZE_ERROR", "GOAWAY %r" % code)


@case("4.1.unknown-frame-type-is-ignored")
def _():
    c = Conn()
    c.send(frame(0x20, 0, 0, b"whatever") + c.request(1))
    status, headers, body = c.response(1)
    return expect(status == 200, "status %r %r" % (status, headers))


# --- 4.3 Header compression -----------------------------------------------------------------

@case("4.3.undecodable-block-is-a-compression-error")
def _():
    c = Conn()
    c.send(frame(HEADERS, END_HEADERS | END_STREAM, 1, b"\xff\xff\xff\xff\xff\xff"))
    code = c.goaway()
    return expect(code == "COMPRESSION_ERROR", "GOAWAY %r" % code)


@case("4.3.dynamic-table-is-used-across-requests")
def _():
    c = Conn()
    c.send(c.request(1, extra=[("x-long", "a" * 200)]))
    first = c.response(1)
    c.send(c.request(3, extra=[("x-long", "a" * 200)]))  # now an index into the table
    second = c.response(3)
    return expect(first[0] == 200 and second[0] == 200, "statuses %r %r" % (first[0], second[0]))


# --- 5.1 Stream states ----------------------------------------------------------------------

@case("5.1.data-on-idle-stream")
def _():
    c = Conn()
    c.send(frame(DATA, END_STREAM, 1, b"x"))
    code = c.goaway()
    return expect(code == "PROTOCOL_ERROR", "GOAWAY %r" % code)


@case("5.1.1.even-stream-id-from-client")
def _():
    c = Conn()
    c.send(c.request(2))
    code = c.goaway()
    return expect(code == "PROTOCOL_ERROR", "GOAWAY %r" % code)


@case("5.1.1.stream-id-going-down")
def _():
    c = Conn()
    c.send(c.request(5))
    c.response(5)
    c.send(c.request(3))
    code = c.goaway()
    return expect(code == "PROTOCOL_ERROR", "GOAWAY %r" % code)


@case("5.1.headers-on-closed-stream")
def _():
    c = Conn()
    c.send(c.request(1))
    c.response(1)
    c.send(c.request(1))
    got = c.reset_of(1)
    return expect(got in ("GOAWAY STREAM_CLOSED", "RST STREAM_CLOSED", "GOAWAY PROTOCOL_ERROR"), got)


@case("5.1.2.streams-past-the-limit-are-refused")
def _():
    c = Conn()
    c.wait_for(lambda f: f[0] == SETTINGS and f[1] & ACK)  # our limit of 8 is in force
    # Nine requests that stay open (a deferred answer that never comes until the client leaves).
    c.send(b"".join(c.request(1 + 2 * i, path="/csp/later/never") for i in range(9)))
    got = c.reset_of(17)
    return expect(got in ("RST REFUSED_STREAM", "RST PROTOCOL_ERROR", "GOAWAY PROTOCOL_ERROR"), got)


# --- 5.4 / 6.4 RST_STREAM -------------------------------------------------------------------

@case("6.4.rst-stream-on-idle-stream")
def _():
    c = Conn()
    c.send(frame(RST_STREAM, 0, 1, struct.pack(">I", 8)))
    code = c.goaway()
    return expect(code == "PROTOCOL_ERROR", "GOAWAY %r" % code)


@case("6.4.rst-stream-bad-length")
def _():
    c = Conn()
    c.send(c.request(1, path="/csp/later/never") + frame(RST_STREAM, 0, 1, b"\0\0\0"))
    code = c.goaway()
    return expect(code == "FRAME_SIZE_ERROR", "GOAWAY %r" % code)


@case("6.4.reset-stream-leaves-the-connection-working")
def _():
    c = Conn()
    c.send(c.request(1, path="/csp/later/never") + frame(RST_STREAM, 0, 1, struct.pack(">I", 8)) + c.request(3))
    status, headers, body = c.response(3)
    return expect(status == 200, "status %r" % status)


# --- 6.5 SETTINGS ---------------------------------------------------------------------------

@case("6.5.settings-are-acknowledged")
def _():
    c = Conn()
    c.send(settings((S_HEADER_TABLE_SIZE, 1024)))
    f = c.wait_for(lambda f: f[0] == SETTINGS and f[1] & ACK)
    return expect(f is not None, "ack %r" % (f is not None))


@case("6.5.settings-ack-with-payload")
def _():
    c = Conn()
    c.send(frame(SETTINGS, ACK, 0, b"\0\x01\0\0\0\0"))
    code = c.goaway()
    return expect(code == "FRAME_SIZE_ERROR", "GOAWAY %r" % code)


@case("6.5.settings-on-a-stream")
def _():
    c = Conn()
    c.send(frame(SETTINGS, 0, 1, b""))
    code = c.goaway()
    return expect(code == "PROTOCOL_ERROR", "GOAWAY %r" % code)


@case("6.5.2.enable-push-not-0-or-1")
def _():
    c = Conn()
    c.send(settings((S_ENABLE_PUSH, 2)))
    code = c.goaway()
    return expect(code == "PROTOCOL_ERROR", "GOAWAY %r" % code)


@case("6.5.2.initial-window-too-large")
def _():
    c = Conn()
    c.send(settings((S_INITIAL_WINDOW_SIZE, 2 ** 31)))
    code = c.goaway()
    return expect(code == "FLOW_CONTROL_ERROR", "GOAWAY %r" % code)


@case("6.5.2.max-frame-size-too-small")
def _():
    c = Conn()
    c.send(settings((S_MAX_FRAME_SIZE, 16383)))
    code = c.goaway()
    return expect(code == "PROTOCOL_ERROR", "GOAWAY %r" % code)


# --- 6.7 PING -------------------------------------------------------------------------------

@case("6.7.ping-is-answered-with-its-payload")
def _():
    c = Conn()
    c.send(frame(PING, 0, 0, b"cspd-h2!"))
    f = c.wait_for(lambda f: f[0] == PING)
    return expect(f and f[1] & ACK and f[3] == b"cspd-h2!", "pong %r" % (f and f[3]))


@case("6.7.ping-on-a-stream")
def _():
    c = Conn()
    c.send(frame(PING, 0, 1, b"\0" * 8))
    code = c.goaway()
    return expect(code == "PROTOCOL_ERROR", "GOAWAY %r" % code)


@case("6.7.ping-bad-length")
def _():
    c = Conn()
    c.send(frame(PING, 0, 0, b"\0" * 7))
    code = c.goaway()
    return expect(code == "FRAME_SIZE_ERROR", "GOAWAY %r" % code)


# --- 6.8 GOAWAY -----------------------------------------------------------------------------

@case("6.8.client-goaway-ends-the-connection")
def _():
    c = Conn()
    c.send(c.request(1))
    c.response(1)
    c.send(frame(GOAWAY, 0, 0, struct.pack(">II", 0, 0)))
    c.wait_for(lambda f: False, timeout=2)
    return expect(c.closed, "closed %r" % c.closed)


# --- 6.9 Flow control -----------------------------------------------------------------------

@case("6.9.window-update-zero-on-connection")
def _():
    c = Conn()
    c.send(frame(WINDOW_UPDATE, 0, 0, struct.pack(">I", 0)))
    code = c.goaway()
    return expect(code == "PROTOCOL_ERROR", "GOAWAY %r" % code)


@case("6.9.window-update-zero-on-stream")
def _():
    c = Conn()
    c.send(c.request(1, path="/csp/later/never") + frame(WINDOW_UPDATE, 0, 1, struct.pack(">I", 0)))
    got = c.reset_of(1)
    return expect(got in ("RST PROTOCOL_ERROR", "GOAWAY PROTOCOL_ERROR"), got)


@case("6.9.1.connection-window-overflow")
def _():
    c = Conn()
    c.send(frame(WINDOW_UPDATE, 0, 0, struct.pack(">I", 2 ** 31 - 1)))
    code = c.goaway()
    return expect(code == "FLOW_CONTROL_ERROR", "GOAWAY %r" % code)


@case("6.9.body-is-received-under-flow-control")
def _():
    c = Conn()
    body = bytes(range(256)) * 3000  # 768000 bytes: several windows
    c.send(c.request(1, path="/csp/echo", method="POST", end_stream=False))
    sent = 0
    window = 65535
    while sent < len(body):
        n = min(16384, len(body) - sent, window)
        if n <= 0:
            f = c.wait_for(lambda f: f[0] == WINDOW_UPDATE)
            if f is None:
                return expect(False, "no WINDOW_UPDATE after %d bytes" % sent)
            if f[2] == 0:
                window += struct.unpack(">I", f[3])[0]
            continue
        c.send(frame(DATA, END_STREAM if sent + n == len(body) else 0, 1, body[sent:sent + n]))
        sent += n
        window -= n
    status, headers, echoed = c.response(1)
    return expect(status == 200 and b"body-size=768000" in echoed, "status %r" % status)


# --- 6.10 CONTINUATION ----------------------------------------------------------------------

@case("6.10.continuation-without-headers")
def _():
    c = Conn()
    c.send(frame(CONTINUATION, END_HEADERS, 1, c.headers_block([("a", "b")])))
    code = c.goaway()
    return expect(code == "PROTOCOL_ERROR", "GOAWAY %r" % code)


@case("6.10.other-frame-inside-a-header-block")
def _():
    c = Conn()
    block = c.headers_block([(":method", "GET"), (":scheme", "http"), (":path", "/csp/hello"), (":authority", "x")])
    c.send(frame(HEADERS, END_STREAM, 1, block[:5]) + frame(PING, 0, 0, b"\0" * 8) +
           frame(CONTINUATION, END_HEADERS, 1, block[5:]))
    code = c.goaway()
    return expect(code == "PROTOCOL_ERROR", "GOAWAY %r" % code)


@case("6.10.headers-in-continuations-are-served")
def _():
    c = Conn()
    block = c.headers_block([(":method", "GET"), (":scheme", "http"), (":path", "/csp/hello"),
                             (":authority", "x"), ("x-pad", "p" * 3000)])
    parts = [block[i:i + 1000] for i in range(0, len(block), 1000)]
    data = frame(HEADERS, END_STREAM, 1, parts[0])
    for i, part in enumerate(parts[1:]):
        data += frame(CONTINUATION, END_HEADERS if i == len(parts) - 2 else 0, 1, part)
    c.send(data)
    status, headers, body = c.response(1)
    return expect(status == 200, "status %r" % status)


# --- 8.1 / 8.2 / 8.3 HTTP semantics ---------------------------------------------------------

def malformed(fields, end_stream=True, then=b""):
    c = Conn()
    c.send(c.request(1, fields=fields, end_stream=end_stream) + then)
    got = c.reset_of(1)
    return expect(got in ("RST PROTOCOL_ERROR", "GOAWAY PROTOCOL_ERROR"), got)


BASE = [(":method", "GET"), (":scheme", "http"), (":path", "/csp/hello"), (":authority", "localhost")]


@case("8.2.uppercase-field-name")
def _():
    return malformed(BASE + [("X-Upper", "1")])


@case("8.2.2.connection-specific-field")
def _():
    return malformed(BASE + [("connection", "keep-alive")])


@case("8.2.2.te-other-than-trailers")
def _():
    return malformed(BASE + [("te", "gzip")])


@case("8.2.2.te-trailers-is-allowed")
def _():
    c = Conn()
    c.send(c.request(1, fields=BASE + [("te", "trailers")]))
    return expect(c.response(1)[0] == 200, "served")


@case("8.3.1.host-unlike-authority-is-malformed")
def _():
    # A handler reads Host: one that names another entity than :authority must not reach it.
    return malformed(BASE + [("host", "elsewhere.example")])


@case("8.3.1.host-like-authority-is-served")
def _():
    c = Conn()
    c.send(c.request(1, fields=BASE + [("host", "LocalHost")]))
    return expect(c.response(1)[0] == 200, "served")


@case("8.3.missing-method")
def _():
    return malformed([(":scheme", "http"), (":path", "/csp/hello"), (":authority", "localhost")])


@case("8.3.missing-path")
def _():
    return malformed([(":method", "GET"), (":scheme", "http"), (":authority", "localhost")])


@case("8.3.empty-path")
def _():
    return malformed([(":method", "GET"), (":scheme", "http"), (":path", ""), (":authority", "localhost")])


@case("8.3.unknown-pseudo-header")
def _():
    return malformed(BASE + [(":colour", "blue")])


@case("8.3.pseudo-header-after-regular")
def _():
    return malformed(BASE[:3] + [("accept", "*/*"), (":authority", "localhost")])


@case("8.3.duplicate-pseudo-header")
def _():
    return malformed(BASE + [(":path", "/again")])


@case("8.3.response-pseudo-header-in-request")
def _():
    return malformed(BASE + [(":status", "200")])


@case("8.1.1.content-length-does-not-match-data")
def _():
    c = Conn()
    return malformed(BASE[:1] + [(":scheme", "http"), (":path", "/csp/echo"), (":authority", "x"),
                                 ("content-length", "10")], end_stream=False,
                     then=frame(DATA, END_STREAM, 1, b"12345"))


@case("8.1.trailers-are-accepted")
def _():
    c = Conn()
    c.send(c.request(1, path="/csp/echo", method="POST", end_stream=False) + frame(DATA, 0, 1, b"abc") +
           frame(HEADERS, END_HEADERS | END_STREAM, 1, c.headers_block([("x-trailer", "1")])))
    status, headers, body = c.response(1)
    return expect(status == 200 and b"body-size=3" in body, "status %r" % status)


@case("8.3.1.authority-is-the-host")
def _():
    c = Conn()
    c.send(c.request(1, path="/csp/echo"))
    status, headers, body = c.response(1)
    return expect(status == 200 and b"version=2.0" in body, "status %r body %r" % (status, body[:200]))


@case("8.2.3.split-cookies-are-joined")
def _():
    c = Conn()
    c.send(c.request(1, path="/csp/echo", extra=[("cookie", "a=1"), ("cookie", "b=2")]))
    status, headers, body = c.response(1)
    return expect(status == 200, "status %r" % status)


@case("8.1.head-has-no-body")
def _():
    c = Conn()
    c.send(c.request(1, method="HEAD"))
    status, headers, body = c.response(1)
    return expect(status == 200 and body == b"" and ("content-length", "20") in headers, "%r %r" % (headers, body))


@case("8.2.response-fields-are-lower-case-without-connection-fields")
def _():
    c = Conn()
    c.send(c.request(1))
    status, headers, body = c.response(1)
    names = [n for n, v in headers]
    bad = [n for n in names if n != n.lower() or n in ("connection", "keep-alive", "transfer-encoding")]
    return expect(status == 200 and not bad, "names %r" % names)


# --- Limits ---------------------------------------------------------------------------------

@case("limit.header-list-past-max-header-size-is-431")
def _():
    c = Conn()
    c.send(c.request(1, extra=[("x-big-%d" % i, "v" * 1000) for i in range(10)]))
    status, headers, body = c.response(1)
    return expect(status == 431, "status %r" % status)


@case("limit.body-past-max-body-is-413")
def _():
    c = Conn()
    c.send(c.request(1, path="/csp/echo", method="POST", end_stream=False))
    chunk = b"y" * 16384
    sent, status = 0, None
    window = 65535
    while sent < 1200 * 1024:
        if window < len(chunk):
            f = c.wait_for(lambda f: f[0] in (WINDOW_UPDATE, HEADERS, RST_STREAM, GOAWAY))
            if f is None:
                break
            if f[0] == WINDOW_UPDATE and f[2] == 0:
                window += struct.unpack(">I", f[3])[0]
            elif f[0] == HEADERS:
                status = int(dict(c.decoder.decode(f[3])).get(":status", 0))
                break
            continue
        if not c.send(frame(DATA, 0, 1, chunk)):
            break
        sent += len(chunk)
        window -= len(chunk)
    if status is None:
        status = c.response(1)[0]
    return expect(status == 413, "status %r after %d bytes" % (status, sent))


# --- Attacks --------------------------------------------------------------------------------

def cut_within(c, frames, expected_codes, per_write=200, limit_s=10.0, most=20000):
    """Sends the frames from `frames` (a generator) in writes of `per_write`, until the server
    says GOAWAY or closes. True when it did, with one of `expected_codes`, before `most` frames
    were sent (what the socket buffers hold in flight counts too)."""
    deadline = time.time() + limit_s
    sent = 0
    batch = []
    for f in frames:
        batch.append(f)
        if len(batch) < per_write:
            continue
        if not c.send(b"".join(batch)) or time.time() > deadline:
            break
        sent += len(batch)
        batch = []
        # Drain what came, looking for the GOAWAY.
        while True:
            f2 = c.read_frame(timeout=0.0)
            if f2 is None:
                break
            if f2[0] == GOAWAY:
                code = ERRORS[struct.unpack(">I", f2[3][4:8])[0]]
                return code in expected_codes and sent <= most, "GOAWAY %s after %d frames" % (code, sent)
        if c.closed:
            break
    code = c.goaway(timeout=3)
    return ((code in expected_codes) or (code is None and c.closed and None in expected_codes)) and sent <= most, \
        "GOAWAY %r closed %r after %d frames" % (code, c.closed, sent)


@case("attack.rapid-reset")
def _():
    # CVE-2023-44487: streams opened and reset at once, in a loop.
    c = Conn()

    def frames():
        for i in range(100000):
            sid = 1 + 2 * i
            yield c.request(sid, path="/csp/hello")
            yield frame(RST_STREAM, 0, sid, struct.pack(">I", 8))
    return cut_within(c, frames(), ("ENHANCE_YOUR_CALM", "INTERNAL_ERROR"))


@case("attack.continuation-flood")
def _():
    # CVE-2024-27316 and kin: a header block that never ends.
    c = Conn()
    c.wait_for(lambda f: f[0] == SETTINGS and f[1] & ACK)  # our SETTINGS ACK must not land inside the block
    first = c.headers_block(BASE)

    def frames():
        yield frame(HEADERS, END_STREAM, 1, first)
        block = c.headers_block([("x-flood", "z" * 1000)])
        while True:
            yield frame(CONTINUATION, 0, 1, block)
    return cut_within(c, frames(), ("ENHANCE_YOUR_CALM",), per_write=10)


@case("attack.empty-continuation-flood")
def _():
    c = Conn()
    c.wait_for(lambda f: f[0] == SETTINGS and f[1] & ACK)

    def frames():
        yield frame(HEADERS, END_STREAM, 1, c.headers_block(BASE))
        while True:
            yield frame(CONTINUATION, 0, 1, b"")
    return cut_within(c, frames(), ("ENHANCE_YOUR_CALM",), per_write=10)


@case("attack.hpack-bomb")
def _():
    # A 3000-byte field put in the dynamic table once (with BASE's fields it fits the 4096 bytes
    # of the default table, so nothing is evicted), then referred to by its index (one byte)
    # again and again: a 4 KB block that decodes to 12 MB. It must never reach a handler.
    c = Conn()
    enc = c.encoder
    c.send(frame(HEADERS, END_HEADERS | END_STREAM, 1, enc.encode(BASE + [("x-bomb", "b" * 3000)])))
    c.response(1)
    # BASE is all in the table by now, so encoding it adds nothing: x-bomb stays the newest
    # dynamic entry, index 62 (RFC 7541 §2.3.3), one byte as an indexed field (0x80 | 62).
    bomb = enc.encode(BASE) + bytes([0x80 | 62]) * 4000
    c.send(frame(HEADERS, END_HEADERS | END_STREAM, 3, bomb))
    status, headers, body = c.response(3)
    return expect(status == 431, "status %r %r" % (status, headers))


def flood(kind_frames, codes=("ENHANCE_YOUR_CALM",)):
    c = Conn()
    return cut_within(c, kind_frames(c), codes, per_write=500)


@case("attack.settings-flood")
def _():
    return flood(lambda c: (settings((S_HEADER_TABLE_SIZE, 4096)) for _ in range(200000)))


@case("attack.settings-flood-in-one-read")
def _():
    # More SETTINGS in one read than nghttp2 queues acknowledgements for (its own flood limit
    # trips before ours): still a GOAWAY that says why, never a silent close.
    c = Conn()
    c.send(b"".join(settings((S_HEADER_TABLE_SIZE, 4096)) for _ in range(3000)))
    code = c.goaway(timeout=5)
    return code == "ENHANCE_YOUR_CALM", "GOAWAY %r closed %r" % (code, c.closed)


@case("attack.ping-flood")
def _():
    return flood(lambda c: (frame(PING, 0, 0, b"12345678") for _ in range(200000)))


@case("attack.priority-flood")
def _():
    return flood(lambda c: (frame(PRIORITY, 0, 1 + 2 * (i % 100), struct.pack(">IB", 0, 16)) for i in range(200000)))


@case("attack.empty-data-flood")
def _():
    def frames(c):
        yield c.request(1, path="/csp/later/never", method="POST", end_stream=False)
        for _ in range(200000):
            yield frame(DATA, 0, 1, b"")
    return flood(frames)


@case("attack.zero-stream-window-reader-is-timed-out")
def _():
    # The client sets every stream's window to 0 and asks for a big file: the server can send
    # no DATA. It must not hold the stream (and the file) forever: --send-timeout (2 s in this
    # run) resets it, and the connection goes on.
    c = Conn(initial_settings=[(S_INITIAL_WINDOW_SIZE, 0)])
    c.send(c.request(1, path="/big.bin"))
    started = time.time()
    got = c.reset_of(1, timeout=8)
    waited = time.time() - started
    c.send(c.request(3, path="/csp/hello"))
    f = c.wait_for(lambda f: f[0] == HEADERS and f[2] == 3, timeout=3)
    return expect(got == "RST CANCEL" and 1.5 < waited < 8 and f is not None,
                  "%r after %.1f s, then stream 3 %s" % (got, waited, "answered" if f else "not answered"))


@case("attack.zero-connection-window-reader-is-timed-out")
def _():
    # Streams may take 1 MiB, but the connection's window (65535 at first) is never opened
    # again: once it is spent the server can send nothing on any stream. --send-timeout ends
    # the connection.
    c = Conn(initial_settings=[(S_INITIAL_WINDOW_SIZE, 1 << 20)])
    c.send(c.request(1, path="/big.bin"))
    started = time.time()
    code = c.goaway(timeout=8)
    waited = time.time() - started
    return expect((code == "NO_ERROR" or c.closed) and 1.5 < waited < 8, "GOAWAY %r after %.1f s" % (code, waited))


@case("timeout.stalled-request-is-reset")
def _():
    # A request whose body stops coming: its stream is reset after --header-timeout (3 s in
    # this run), while a sibling on the same connection is answered.
    c = Conn()
    c.send(c.request(1, path="/csp/echo", method="POST", end_stream=False) + frame(DATA, 0, 1, b"part"))
    started = time.time()
    c.send(c.request(3))
    got = c.reset_of(1, timeout=8)
    waited = time.time() - started
    return expect(got == "RST CANCEL" and 2.5 < waited < 8, "%r after %.1f s" % (got, waited))


@case("timeout.idle-connection-gets-goaway")
def _():
    # --keepalive-timeout 2 in this run.
    c = Conn()
    c.send(c.request(1))
    c.response(1)
    started = time.time()
    f = c.wait_for(lambda f: f[0] == GOAWAY, timeout=6)
    waited = time.time() - started
    code = f and ERRORS[struct.unpack(">I", f[3][4:8])[0]]
    last = f and struct.unpack(">I", f[3][:4])[0]
    return expect(code == "NO_ERROR" and last == 1 and 1.5 < waited < 5, "GOAWAY %r last %r after %.1f s" % (code, last, waited))


# --- Multiplexing: a stream that waits holds back none of its siblings -------------------------

def finish_times(c, streams, timeout=8.0, read_window_of=None):
    """When each of `streams` ended (seconds from now), reading all of them on one connection.
    DATA of streams not in `read_window_of` (all, when None) gets its window back; the others' stays shut."""
    started, ends, statuses = time.time(), {}, {}
    deadline = started + timeout
    while len(ends) < len(streams):
        f = c.read_frame(max(0.0, deadline - time.time()))
        if f is None:
            break
        kind, flags, sid, payload = f
        if kind == HEADERS:  # every block is decoded: the decoder's table must follow the server's
            fields = dict(c.decoder.decode(payload))
            if sid in streams:
                statuses[sid] = fields.get(":status")
        if kind == DATA and payload:
            c.send(frame(WINDOW_UPDATE, 0, 0, struct.pack(">I", len(payload))))
            if read_window_of is None or sid in read_window_of:
                c.send(frame(WINDOW_UPDATE, 0, sid, struct.pack(">I", len(payload))))
        if kind in (HEADERS, DATA) and flags & END_STREAM and sid in streams:
            ends[sid] = time.time() - started
        if kind in (RST_STREAM, GOAWAY):
            ends.setdefault(sid, -1)
    return ends, statuses


@case("multiplex.deferred-stream-holds-back-no-sibling")
def _():
    c = Conn()
    c.send(c.request(1, path="/csp/later/timer?ms=1500") + c.request(3) + c.request(5, path="/csp/echo"))
    ends, statuses = finish_times(c, [1, 3, 5])
    return expect(ends.get(3, 9) < 0.5 and ends.get(5, 9) < 0.5 and 1.4 < ends.get(1, 0) < 5,
                  "ends %r statuses %r" % (ends, statuses))


@case("multiplex.blocking-stream-holds-back-no-sibling")
def _():
    c = Conn()
    c.send(c.request(1, path="/csp/slow?ms=1500") + c.request(3) + c.request(5, path="/csp/later/now"))
    ends, statuses = finish_times(c, [1, 3, 5])
    return expect(ends.get(3, 9) < 0.5 and ends.get(5, 9) < 0.5 and 1.4 < ends.get(1, 0) < 5,
                  "ends %r statuses %r" % (ends, statuses))


@case("multiplex.slow-reader-stream-stalls-no-sibling")
def _():
    # Stream 1 streams 4 MiB to a reader that never opens its window again; streams 3 and 5 are
    # answered meanwhile on the same connection.
    c = Conn()
    c.send(c.request(1, path="/csp/stream/big?mb=4"))
    time.sleep(0.3)  # stream 1's window is full by now
    c.send(c.request(3) + c.request(5, path="/csp/stream/chunks?n=3"))
    ends, statuses = finish_times(c, [3, 5], timeout=4, read_window_of=[3, 5])
    return expect(ends.get(3, 9) < 1 and ends.get(5, 9) < 1 and statuses.get(5) == "200",
                  "ends %r statuses %r" % (ends, statuses))


@case("multiplex.many-streams-on-one-connection")
def _():
    c = Conn()
    c.wait_for(lambda f: f[0] == SETTINGS and f[1] & ACK)
    ids = [1 + 2 * i for i in range(8)]
    c.send(b"".join(c.request(i, path="/csp/hello" if i % 4 == 1 else "/csp/echo?n=%d" % i) for i in ids))
    ends, statuses = finish_times(c, ids)
    return expect(len(ends) == 8 and all(v == "200" for v in statuses.values()), "statuses %r" % statuses)


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument("port", type=int)
    ap.add_argument("--tls", action="store_true")
    ap.add_argument("--only", default="")
    ARGS = ap.parse_args()
    results = {}
    for name, fn in CASES.items():
        if not name.startswith(ARGS.only):
            continue
        try:
            ok, detail = fn()
        except Exception as e:  # a case that raises has failed, and says why
            ok, detail = False, "raised %s: %s" % (type(e).__name__, e)
        results[name] = {"ok": ok, "detail": detail}
    print(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
