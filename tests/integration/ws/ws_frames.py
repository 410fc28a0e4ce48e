#!/usr/bin/env python3
"""cspd's own WebSocket conformance cases, in raw frames, by the case categories of the Autobahn
Testsuite (which needs Python 2 and cannot run here): the opening handshake, framing, pings and
pongs, reserved bits, opcodes, fragmentation, UTF-8 handling, close handling, limits and
performance, and what cspd adds (back-pressure, sends from other threads, topics, timeouts).
Each case states the answer RFC 6455 requires and checks the server gives it.

Usage: ws_frames.py PORT [--tls] [--h2] [--only PREFIX] [--max-message N] [--timing]
--h2 carries every conversation on an HTTP/2 stream instead (RFC 8441's extended CONNECT; h2c with
prior knowledge on the plain port, ALPN h2 with --tls): each case then runs through the tunnel, one
HTTP/2 connection per conversation, and the h2.* cases replace HTTP/1.1's handshake.* ones. It
needs Debian's python3-h2 (/usr/bin/python3).
The server serves tests/handlers/ws_probe.c at /csp/ws_probe and examples/ws_echo.c at
/csp/ws_echo, with --ws-max-message N (65536 by default here). --timing runs only the cases about
pings and silence: with --only timing., against a server with --ws-ping-interval 1; with --only
idle., against one with --ws-ping-interval 0 --ws-idle-timeout 2.
Prints one JSON object: {case: {"ok", "detail"}}."""
import argparse
import base64
import hashlib
import json
import os
import socket
import ssl
import struct
import sys
import time
import zlib

ARGS = None
GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
CONT, TEXT, BINARY, CLOSE, PING, PONG = 0x0, 0x1, 0x2, 0x8, 0x9, 0xA


class Closed(Exception):
    pass


def connect(alpn="http/1.1"):
    raw = socket.create_connection(("127.0.0.1", ARGS.port), timeout=5)
    raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    if ARGS.tls:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        ctx.set_alpn_protocols([alpn])
        raw = ctx.wrap_socket(raw, server_hostname="localhost")
    return raw


class H2Tunnel:
    """WebSockets over HTTP/2 streams (RFC 8441) on a connection of their own. The first stream
    (`stream`) gets the calls of a socket the cases use (sendall, recv, settimeout, close): recv
    gives b"" once the server ends or resets it. Others may be opened beside it (open, read)."""

    def __init__(self, path, extra=(), sock=None):
        import h2.config
        import h2.connection
        import h2.events
        import h2.exceptions
        self.events, self.errors = h2.events, h2.exceptions
        self.ConnectionState = h2.connection.ConnectionState
        self.inbound, self.goaway = b"", None
        self.acknowledge, self.unacknowledged = True, []  # off: the server's window for us stays shut
        self.unsent = b""
        self.sock = sock or connect(alpn="h2")
        self.conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True, header_encoding="utf-8"))
        self.conn.initiate_connection()
        self.sock.sendall(self.conn.data_to_send())
        self.data, self.ended, self.statuses, self.heads, self.settings = {}, set(), {}, {}, {}
        self.timeout = 5
        while 8 not in self.settings:  # the server's SETTINGS: ENABLE_CONNECT_PROTOCOL must be among them
            self._pump(5)
        if self.settings[8] != 1:
            raise AssertionError("SETTINGS_ENABLE_CONNECT_PROTOCOL is %r" % self.settings[8])
        self.stream = self.open(path, extra)
        self.status, self.fields = self.answer(self.stream)

    def open(self, path, extra=(), websocket=True):
        """Opens a stream: an extended CONNECT for a WebSocket, or else a GET."""
        stream = self.conn.get_next_available_stream_id()
        extra = [(n.lower(), v) for n, v in extra]
        headers = [(":method", "CONNECT" if websocket else "GET")] + \
            ([(":protocol", "websocket")] if websocket else []) + \
            [(":scheme", "https" if ARGS.tls else "http"), (":path", path), (":authority", "localhost")]
        if websocket and not any(n == "sec-websocket-version" for n, v in extra):
            headers.append(("sec-websocket-version", "13"))
        self.conn.send_headers(stream, headers + extra, end_stream=not websocket)
        self.data[stream] = b""
        self.sock.sendall(self.conn.data_to_send())
        return stream

    def answer(self, stream):
        """The status and fields of `stream`'s answer."""
        while stream not in self.statuses:
            if self.ended and None in self.ended:
                raise Closed("the connection ended before an answer")
            self._pump(5)
        return self.statuses[stream], self.heads[stream]

    def _pump(self, timeout):
        self.sock.settimeout(timeout)
        try:
            got = self.sock.recv(1 << 16)
        except socket.timeout:
            raise TimeoutError("nothing within %.1f s" % timeout)
        except (ConnectionResetError, ssl.SSLError):
            got = b""
        if not got:
            self.ended.add(None)
            return
        self.inbound += got
        # One frame at a time: python-h2 closes its state machine on a GOAWAY and refuses what
        # follows, though RFC 9113 §6.8 lets the streams it leaves open finish (a drain's close
        # frames come behind its GOAWAY). Its state is put back after each GOAWAY.
        while len(self.inbound) >= 9:
            size = 9 + int.from_bytes(self.inbound[:3], "big")
            if len(self.inbound) < size:
                break
            frame, self.inbound = self.inbound[:size], self.inbound[size:]
            for e in self.conn.receive_data(frame):
                self._event(e)
        out = self.conn.data_to_send()
        if out:
            self.sock.sendall(out)

    def _event(self, e):
        if isinstance(e, self.events.RemoteSettingsChanged):
            for code, change in e.changed_settings.items():
                self.settings[int(code)] = change.new_value
        elif isinstance(e, self.events.ResponseReceived):
            fields = {}
            for name, value in e.headers:
                if name == ":status":
                    self.statuses[e.stream_id] = int(value)
                else:
                    fields.setdefault(name, []).append(value)
            self.heads[e.stream_id] = fields
        elif isinstance(e, self.events.DataReceived):
            if self.acknowledge:
                self.conn.acknowledge_received_data(e.flow_controlled_length, e.stream_id)
            else:
                self.unacknowledged.append((e.flow_controlled_length, e.stream_id))
            self.data[e.stream_id] = self.data.get(e.stream_id, b"") + e.data
        elif isinstance(e, (self.events.StreamEnded, self.events.StreamReset)):
            self.ended.add(e.stream_id)
        elif isinstance(e, self.events.ConnectionTerminated):
            self.goaway = e
            if e.error_code != 0:
                self.ended.add(None)
            else:
                self.conn.state_machine.state = self.ConnectionState.CLIENT_OPEN

    def settimeout(self, timeout):
        self.timeout = timeout or 5

    def resume_acknowledging(self):
        """Takes in what came meanwhile: the server's window opens again."""
        self.acknowledge = True
        for size, stream in self.unacknowledged:
            self.conn.acknowledge_received_data(size, stream)
        self.unacknowledged = []
        self.sock.sendall(self.conn.data_to_send())

    def sendall(self, data, stream=None):
        stream = self.stream if stream is None else stream
        while data:
            room = min(self.conn.local_flow_control_window(stream), self.conn.max_outbound_frame_size)
            if room <= 0:
                try:
                    self._pump(self.timeout)
                except TimeoutError:
                    self.unsent = data  # the rest of what was asked: sendall(unsent) goes on
                    raise
                continue
            try:
                self.conn.send_data(stream, data[:room])
            except self.errors.StreamClosedError:
                raise BrokenPipeError("the server ended the stream")  # as a socket the server closed
            data = data[room:]
            self.sock.sendall(self.conn.data_to_send())

    def read(self, stream, n=1 << 16):
        while not self.data.get(stream) and stream not in self.ended and None not in self.ended:
            self._pump(self.timeout)
        got = self.data.get(stream, b"")
        self.data[stream] = got[n:]
        return got[:n]

    def recv(self, n):
        return self.read(self.stream, n)

    def end(self, stream=None):
        """Ends the client's side of a stream (END_STREAM)."""
        self.conn.end_stream(self.stream if stream is None else stream)
        self.sock.sendall(self.conn.data_to_send())

    def close(self):
        self.sock.close()


def read_head(sock):
    data = b""
    while b"\r\n\r\n" not in data:
        got = sock.recv(4096)
        if not got:
            raise Closed("closed during the handshake: %r" % data)
        data += got
    head, rest = data.split(b"\r\n\r\n", 1)
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ")[1])
    fields = {}
    for line in lines[1:]:
        name, value = line.split(":", 1)
        fields.setdefault(name.strip().lower(), []).append(value.strip())
    return status, fields, rest


def request(path, headers):
    text = "GET %s HTTP/1.1\r\nHost: localhost\r\n" % path
    for name, value in headers:
        text += "%s: %s\r\n" % (name, value)
    return (text + "\r\n").encode()


def handshake_answer(path="/csp/ws_probe?let=in", headers=None, body_bytes=4096):
    """Sends one request, returns (status, fields, body) for answers that are not 101."""
    sock = connect()
    key = base64.b64encode(os.urandom(16)).decode()
    if headers is None:
        headers = [("Upgrade", "websocket"), ("Connection", "Upgrade"), ("Sec-WebSocket-Key", key),
                   ("Sec-WebSocket-Version", "13")]
    sock.sendall(request(path, headers))
    status, fields, rest = read_head(sock)
    sock.close()
    return status, fields, rest


class Conn:
    def __init__(self, path="/csp/ws_probe?let=in", extra=(), pings="answer"):
        self.pings = pings  # "answer": pong them and read on; "keep": return them
        if getattr(ARGS, "h2", False):
            self.sock = H2Tunnel(path, extra)
            self.status, self.fields, self.buf = self.sock.status, self.sock.fields, b""
            if self.status != 200:
                raise AssertionError("extended CONNECT answered %d" % self.status)
            if "sec-websocket-accept" in self.fields:
                raise AssertionError("Sec-WebSocket-Accept over HTTP/2 (RFC 8441 has none)")
            return
        self.sock = connect()
        self.key = base64.b64encode(os.urandom(16)).decode()
        headers = [("Upgrade", "websocket"), ("Connection", "Upgrade"), ("Sec-WebSocket-Key", self.key),
                   ("Sec-WebSocket-Version", "13")] + list(extra)
        self.sock.sendall(request(path, headers))
        self.status, self.fields, self.buf = read_head(self.sock)
        if self.status != 101:
            raise AssertionError("handshake answered %d" % self.status)
        expected = base64.b64encode(hashlib.sha1(self.key.encode() + GUID).digest()).decode()
        if self.fields.get("sec-websocket-accept") != [expected]:
            raise AssertionError("wrong Sec-WebSocket-Accept %r" % self.fields.get("sec-websocket-accept"))

    def send_raw(self, data):
        self.sock.sendall(data)

    def frame(self, opcode, payload=b"", fin=True, rsv=0, mask=True, length=None):
        if isinstance(payload, str):
            payload = payload.encode()
        n = len(payload) if length is None else length
        head = bytes([(0x80 if fin else 0) | (rsv << 4) | opcode])
        m = 0x80 if mask else 0
        if n < 126:
            head += bytes([m | n])
        elif n < 65536:
            head += bytes([m | 126]) + struct.pack(">H", n)
        else:
            head += bytes([m | 127]) + struct.pack(">Q", n)
        if not mask:
            return head + payload
        key = os.urandom(4)
        masked = bytes(b ^ key[i % 4] for i, b in enumerate(payload)) if len(payload) < 4096 else \
            (int.from_bytes(payload, "big") ^ int.from_bytes((key * (len(payload) // 4 + 1))[:len(payload)], "big")
             ).to_bytes(len(payload), "big")
        return head + key + masked

    def send(self, opcode, payload=b"", **kw):
        self.sock.sendall(self.frame(opcode, payload, **kw))

    def _need(self, n, timeout):
        deadline = time.time() + timeout
        while len(self.buf) < n:
            left = deadline - time.time()
            if left <= 0:
                raise TimeoutError("no frame within %.1f s" % timeout)
            self.sock.settimeout(left)
            try:
                got = self.sock.recv(1 << 16)
            except socket.timeout:
                raise TimeoutError("no frame within %.1f s" % timeout)
            except (ConnectionResetError, ssl.SSLError):
                got = b""
            if not got:
                raise Closed("connection closed")
            self.buf += got

    def recv(self, timeout=5):
        """The next frame: (fin, rsv, opcode, payload)."""
        while True:
            self._need(2, timeout)
            b0, b1 = self.buf[0], self.buf[1]
            if b1 & 0x80:
                raise AssertionError("the server masked a frame")
            n, at = b1 & 0x7F, 2
            if n == 126:
                self._need(4, timeout)
                n, at = struct.unpack(">H", self.buf[2:4])[0], 4
            elif n == 127:
                self._need(10, timeout)
                n, at = struct.unpack(">Q", self.buf[2:10])[0], 10
            self._need(at + n, timeout)
            payload, self.buf = self.buf[at:at + n], self.buf[at + n:]
            fin, rsv, opcode = bool(b0 & 0x80), (b0 >> 4) & 7, b0 & 0xF
            if opcode == PING and self.pings == "answer":
                self.send(PONG, payload)
                continue
            return fin, rsv, opcode, payload

    def message(self, timeout=5):
        """The next whole data message: (opcode, payload)."""
        opcode, data = None, b""
        while True:
            fin, rsv, op, payload = self.recv(timeout)
            if op == CLOSE:
                raise AssertionError("closed %s instead of a message" % close_text(payload))
            if op in (PING, PONG):
                continue
            if opcode is None:
                opcode = op
            data += payload
            if fin:
                return opcode, data

    def expect_close(self, code, timeout=5):
        """Reads past data until a close frame; checks its code (None: no code), then that the TCP
        connection ends (the server closes first, RFC 6455 §7.1.1)."""
        while True:
            fin, rsv, op, payload = self.recv(timeout)
            if op == CLOSE:
                break
        got = struct.unpack(">H", payload[:2])[0] if len(payload) >= 2 else None
        if got != code:
            raise AssertionError("close code %s, expected %s (%s)" % (got, code, close_text(payload)))
        try:
            self.send(CLOSE, payload[:2])
        except OSError:
            pass
        self.expect_eof(timeout)
        return payload[2:]

    def expect_eof(self, timeout=5):
        try:
            while True:
                fin, rsv, op, payload = self.recv(timeout)
        except Closed:
            return
        except TimeoutError:
            raise AssertionError("the server did not close the TCP connection")

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


def close_text(payload):
    if len(payload) < 2:
        return "without a code"
    return "%d %r" % (struct.unpack(">H", payload[:2])[0], payload[2:])


def close_payload(code, reason=b""):
    return struct.pack(">H", code) + reason


CASES = []


def case(name):
    def register(fn):
        CASES.append((name, fn))
        return fn
    return register


def echo_case(name, opcode, payload, chop=None, path="/csp/ws_echo"):
    @case(name)
    def run():
        c = Conn(path)
        data = c.frame(opcode, payload)
        if chop:
            for i in range(0, len(data), chop):
                c.send_raw(data[i:i + chop])
                time.sleep(0.001 if len(data) < 1000 else 0)
        else:
            c.send_raw(data)
        op, got = c.message()
        assert op == opcode, "opcode %d came back as %d" % (opcode, op)
        assert got == (payload.encode() if isinstance(payload, str) else payload), "payload differs (%d bytes)" % len(got)
        c.close()
        return "%d bytes echoed" % len(got)


def fail_case(name, frames, code, path="/csp/ws_probe?let=in"):
    """Sends `frames` (from a function of the connection) and expects a close with `code`. Cases named
    deflate.* offer permessage-deflate."""
    @case(name)
    def run():
        c = Conn(path, extra=DEFLATE if name.startswith("deflate.") else ())
        for data in frames(c):
            c.send_raw(data)
        c.expect_close(code)
        c.close()
        return "closed %s" % code


# ---- 0. The opening handshake (RFC 6455 §4) --------------------------------------------------

@case("handshake.plain_get_426_upgrade")
def _():
    status, fields, _ = handshake_answer("/csp/ws_echo", headers=[])
    assert status == 426, status
    assert fields.get("upgrade") == ["websocket"], fields
    return "426 Upgrade: websocket"


@case("handshake.version_8_426_names_13")
def _():
    key = base64.b64encode(os.urandom(16)).decode()
    status, fields, _ = handshake_answer("/csp/ws_echo", [("Upgrade", "websocket"), ("Connection", "Upgrade"),
                                                          ("Sec-WebSocket-Key", key), ("Sec-WebSocket-Version", "8")])
    assert status == 426, status
    assert fields.get("sec-websocket-version") == ["13"], fields
    return "426 Sec-WebSocket-Version: 13"


@case("handshake.missing_key_400")
def _():
    status, _, _ = handshake_answer("/csp/ws_echo", [("Upgrade", "websocket"), ("Connection", "Upgrade"),
                                                     ("Sec-WebSocket-Version", "13")])
    assert status == 400, status
    return "400"


@case("handshake.short_key_400")
def _():
    status, _, _ = handshake_answer("/csp/ws_echo", [("Upgrade", "websocket"), ("Connection", "Upgrade"),
                                                     ("Sec-WebSocket-Key", "dGVzdA=="), ("Sec-WebSocket-Version", "13")])
    assert status == 400, status
    return "400"


@case("handshake.no_connection_upgrade_400")
def _():
    key = base64.b64encode(os.urandom(16)).decode()
    status, _, _ = handshake_answer("/csp/ws_echo", [("Upgrade", "websocket"), ("Sec-WebSocket-Key", key),
                                                     ("Sec-WebSocket-Version", "13")])
    assert status == 400, status
    return "400"


@case("handshake.handler_refuses_403_first")
def _():
    status, _, _ = handshake_answer("/csp/ws_probe")
    assert status == 403, status
    return "403 from the handler, before accepting"


@case("handshake.tokens_in_lists_and_any_case")
def _():
    c = Conn("/csp/ws_echo", extra=())
    c.close()
    key = base64.b64encode(os.urandom(16)).decode()
    sock = connect()
    sock.sendall(request("/csp/ws_echo", [("Upgrade", "WebSocket"), ("Connection", "keep-alive, Upgrade"),
                                          ("Sec-WebSocket-Key", key), ("Sec-WebSocket-Version", "13")]))
    status, fields, _ = read_head(sock)
    sock.close()
    assert status == 101, status
    return "101"


@case("handshake.subprotocol_chosen_and_cookie_kept")
def _():
    c = Conn("/csp/ws_probe?let=in&protocol=chat", extra=[("Sec-WebSocket-Protocol", "superchat, chat")])
    assert c.fields.get("sec-websocket-protocol") == ["chat"], c.fields
    assert c.fields.get("set-cookie") == ["probe=1; Path=/"], c.fields
    assert "content-length" not in c.fields and "transfer-encoding" not in c.fields, c.fields
    c.send(TEXT, "hi")
    assert c.message() == (TEXT, b"hi")
    c.close()
    return "Sec-WebSocket-Protocol: chat"


@case("handshake.subprotocol_not_offered_refused")
def _():
    status, _, _ = handshake_answer("/csp/ws_probe?let=in&protocol=chat")
    assert status == 503, status
    return "503: the handler asked for a protocol the client did not offer"


@case("handshake.frames_right_behind_the_handshake")
def _():
    sock = connect()
    key = base64.b64encode(os.urandom(16)).decode()
    c = Conn.__new__(Conn)
    c.sock, c.pings = sock, "answer"
    data = request("/csp/ws_echo", [("Upgrade", "websocket"), ("Connection", "Upgrade"), ("Sec-WebSocket-Key", key),
                                    ("Sec-WebSocket-Version", "13")]) + c.frame(TEXT, "early")
    sock.sendall(data)
    status, fields, c.buf = read_head(sock)
    assert status == 101, status
    assert c.message() == (TEXT, b"early")
    c.close()
    return "echoed"


# ---- HTTP/2's opening handshake (RFC 8441), with --h2 --------------------------------------


@case("h2.extended_connect_answered_200_and_echoes")
def _():
    c = Conn("/csp/ws_echo")
    assert c.status == 200 and "sec-websocket-accept" not in c.fields, (c.status, c.fields)
    c.send(TEXT, "over a stream")
    assert c.message() == (TEXT, b"over a stream")
    c.close()
    return "200, SETTINGS_ENABLE_CONNECT_PROTOCOL = 1"


@case("h2.version_8_426_names_13")
def _():
    t = H2Tunnel("/csp/ws_echo", extra=[("sec-websocket-version", "8")])
    assert t.status == 426 and t.fields.get("sec-websocket-version") == ["13"], (t.status, t.fields)
    t.close()
    return "426, Sec-WebSocket-Version: 13"


@case("h2.handler_refuses_403_first")
def _():
    t = H2Tunnel("/csp/ws_probe")
    assert t.status == 403, t.status
    # Answered before its stream ended: the client is asked to stop sending on it.
    deadline = time.time() + 5
    while t.stream not in t.ended and time.time() < deadline:
        t._pump(5)
    assert t.stream in t.ended, "the refused stream stayed open"
    t.close()
    return "403, stream ended"


@case("h2.a_200_without_accepting_becomes_501")
def _():
    # ?last=close answers 200 with a body and accepts nothing: over HTTP/2 that 200 would open the
    # CONNECT's tunnel (RFC 8441 §5), so the host sends 501 instead.
    t = H2Tunnel("/csp/ws_probe?last=close")
    assert t.status == 501, t.status
    t.close()
    return "501"


@case("h2.plain_get_426")
def _():
    t = H2Tunnel("/csp/ws_echo")
    get = t.open("/csp/ws_echo", websocket=False)
    status, fields = t.answer(get)
    assert status == 426 and "upgrade" not in fields, (status, fields)
    t.close()
    return "426 (no Upgrade field: HTTP/2 has none)"


@case("h2.subprotocol_chosen_and_cookie_kept")
def _():
    c = Conn("/csp/ws_probe?let=in&protocol=chat", extra=[("Sec-WebSocket-Protocol", "superchat, chat")])
    assert c.fields.get("sec-websocket-protocol") == ["chat"], c.fields
    assert c.fields.get("set-cookie") == ["probe=1; Path=/"], c.fields
    c.send(TEXT, "hi")
    assert c.message() == (TEXT, b"hi")
    c.close()
    return "sec-websocket-protocol: chat"


@case("h2.frames_right_behind_the_headers")
def _():
    c = Conn.__new__(Conn)
    c.pings, c.buf = "answer", b""
    first = c.frame(TEXT, "early")

    class Early(H2Tunnel):
        def open(self, path, extra=(), websocket=True):
            stream = H2Tunnel.open(self, path, extra, websocket)
            if websocket:  # DATA right behind the HEADERS, before the 200
                self.conn.send_data(stream, first)
                self.sock.sendall(self.conn.data_to_send())
            return stream
    c.sock = Early("/csp/ws_echo")
    assert c.sock.status == 200, c.sock.status
    assert c.message() == (TEXT, b"early")
    c.close()
    return "echoed"


@case("h2.two_websockets_and_a_request_on_one_connection")
def _():
    t = H2Tunnel("/csp/ws_echo")
    other = t.open("/csp/ws_echo")
    assert t.answer(other)[0] == 200
    get = t.open("/csp/ws_probe", websocket=False)
    assert t.answer(get)[0] == 403
    a, b = Conn.__new__(Conn), Conn.__new__(Conn)
    a.sock, a.buf, a.pings = t, b"", "answer"
    b.sock, b.buf, b.pings = t, b"", "answer"
    a.send(TEXT, "first")
    t.sendall(a.frame(TEXT, "second"), stream=other)
    assert a.message() == (TEXT, b"first")
    data = b""
    while len(data) < 8:
        data += t.read(other)
    assert data[2:] == b"second", data
    t.close()
    return "two conversations and a GET share one connection"


@case("h2.a_client_that_does_not_read_is_not_read")
def _():
    """Pings from a client that takes none of our pongs: once our pongs wait, its bytes wait too
    (its window shuts), and when it reads again every ping has its pong, in order."""
    c = Conn("/csp/ws_echo", pings="keep")
    c.sock.acknowledge = False
    c.sock.settimeout(1)
    pings = 0
    try:
        while pings < 100000:
            c.send(PING, struct.pack(">I", pings) + b"p" * 121)
            pings += 1
    except TimeoutError:
        pass
    sent = pings * 131  # each ping: a 2-byte head, a 4-byte mask, our count and 121 bytes
    assert sent < 1 << 20, "the server took %d bytes from a client that reads nothing" % sent
    c.sock.resume_acknowledging()
    c.sock.settimeout(5)
    if c.sock.unsent:  # the ping our window cut in two
        c.sock.sendall(c.sock.unsent)
        pings += 1
    for i in range(pings):
        fin, rsv, op, payload = c.recv()
        assert op == PONG and payload[:4] == struct.pack(">I", i), "pong %d: %d %r" % (i, op, payload[:4])
    c.send(TEXT, "still here")
    assert c.message() == (TEXT, b"still here")
    c.close()
    return "took %d KiB of pings, then stopped; %d pongs once read" % (sent >> 10, pings)


@case("h2.client_end_stream_is_1006")
def _():
    c = Conn()
    c.send(TEXT, "x")
    c.message()
    c.sock.end()  # END_STREAM without a closing handshake
    c.expect_eof()
    deadline = time.time() + 5
    while time.time() < deadline:
        status, _, body = handshake_answer("/csp/ws_probe?last=close", headers=[])
        if body.startswith(b"1006"):
            return "on_close heard 1006; the stream was reset"
        time.sleep(0.05)
    raise AssertionError("on_close heard %r" % body)


# ---- 1. Framing -------------------------------------------------------------------------------

for size in (0, 125, 126, 127, 65535, 65536):
    echo_case("framing.text_%d" % size, TEXT, "*" * size)
    echo_case("framing.binary_%d" % size, BINARY, bytes(range(256)) * (size // 256) + bytes(size % 256))
echo_case("framing.text_sent_byte_by_byte", TEXT, "Hello, byte by byte", chop=1)
echo_case("framing.binary_64k_in_small_writes", BINARY, os.urandom(65536), chop=997)

fail_case("framing.unmasked_frame_1002", lambda c: [c.frame(TEXT, "x", mask=False)], 1002)
fail_case("framing.length_msb_set_1002",
          lambda c: [bytes([0x82, 0x80 | 127]) + struct.pack(">Q", 1 << 63) + b"\0\0\0\0"], 1002)

# ---- 2. Pings and pongs -----------------------------------------------------------------------


@case("ping.empty_answered")
def _():
    c = Conn(pings="keep")
    c.send(PING)
    fin, rsv, op, payload = c.recv()
    assert op == PONG and payload == b"", (op, payload)
    c.close()
    return "pong"


@case("ping.125_bytes_answered_with_them")
def _():
    c = Conn(pings="keep")
    body = os.urandom(125)
    c.send(PING, body)
    fin, rsv, op, payload = c.recv()
    assert op == PONG and payload == body
    c.close()
    return "pong with the same 125 bytes"


fail_case("ping.126_bytes_1002", lambda c: [c.frame(PING, b"x" * 126)], 1002)
fail_case("ping.fragmented_1002", lambda c: [c.frame(PING, b"x", fin=False)], 1002)


@case("ping.unsolicited_pong_ignored")
def _():
    c = Conn()
    c.send(PONG, "unasked")
    c.send(TEXT, "after")
    assert c.message() == (TEXT, b"after")
    c.close()
    return "ignored"


@case("ping.ten_pings_ten_pongs_in_order")
def _():
    c = Conn(pings="keep")
    for i in range(10):
        c.send(PING, str(i))
    for i in range(10):
        fin, rsv, op, payload = c.recv()
        assert op == PONG and payload == str(i).encode(), (op, payload)
    c.close()
    return "10 pongs"


@case("ping.between_fragments")
def _():
    c = Conn(pings="keep")
    c.send(TEXT, "frag", fin=False)
    c.send(PING, "mid")
    c.send(CONT, "ment")
    fin, rsv, op, payload = c.recv()
    assert op == PONG and payload == b"mid", (op, payload)
    fin, rsv, op, payload = c.recv()
    assert op == TEXT and payload == b"fragment", (op, payload)
    c.close()
    return "pong, then the message"

# ---- 3. Reserved bits -------------------------------------------------------------------------

for rsv in (1, 2, 3, 4, 7):
    fail_case("rsv.%d_on_text_1002" % rsv, lambda c, rsv=rsv: [c.frame(TEXT, "x", rsv=rsv)], 1002)
fail_case("rsv.on_ping_1002", lambda c: [c.frame(PING, "x", rsv=1)], 1002)
fail_case("rsv.after_a_good_message_1002",
          lambda c: [c.frame(TEXT, "fine"), c.frame(BINARY, b"x", rsv=2)], 1002)

# ---- 4. Opcodes -------------------------------------------------------------------------------

for op in (3, 4, 5, 6, 7, 0xB, 0xC, 0xD, 0xE, 0xF):
    fail_case("opcode.%x_1002" % op, lambda c, op=op: [c.frame(op, b"x")], 1002)

# ---- 5. Fragmentation -------------------------------------------------------------------------


@case("fragment.text_in_three")
def _():
    c = Conn("/csp/ws_echo")
    c.send(TEXT, "one ", fin=False)
    c.send(CONT, "two ", fin=False)
    c.send(CONT, "three")
    assert c.message() == (TEXT, b"one two three")
    c.close()
    return "reassembled"


@case("fragment.binary_with_empty_fragments")
def _():
    c = Conn("/csp/ws_echo")
    c.send(BINARY, b"", fin=False)
    c.send(CONT, b"\x00\x01", fin=False)
    c.send(CONT, b"", fin=False)
    c.send(CONT, b"\x02")
    assert c.message() == (BINARY, b"\x00\x01\x02")
    c.close()
    return "reassembled"


@case("fragment.hundred_one_byte_fragments")
def _():
    c = Conn("/csp/ws_echo")
    data = b"".join(c.frame(TEXT if i == 0 else CONT, "a", fin=(i == 99)) for i in range(100))
    c.send_raw(data)
    assert c.message() == (TEXT, b"a" * 100)
    c.close()
    return "reassembled"


fail_case("fragment.continuation_first_1002", lambda c: [c.frame(CONT, "x")], 1002)
fail_case("fragment.continuation_after_a_whole_message_1002",
          lambda c: [c.frame(TEXT, "whole"), c.frame(CONT, "x")], 1002)
fail_case("fragment.text_inside_a_message_1002",
          lambda c: [c.frame(TEXT, "a", fin=False), c.frame(TEXT, "b")], 1002)
fail_case("fragment.binary_inside_a_message_1002",
          lambda c: [c.frame(BINARY, b"a", fin=False), c.frame(BINARY, b"b")], 1002)

# ---- 6. UTF-8 handling ------------------------------------------------------------------------

VALID = ["κόσμε".encode(), "\U0001F600 emoji".encode(), b"\xed\x9f\xbf", b"\xee\x80\x80", b"\xf4\x8f\xbf\xbf",
         b"\xc2\x80", b"\xe0\xa0\x80", b"\xf0\x90\x80\x80"]
INVALID = [b"\xff", b"\xfe", b"\xc0\x80", b"\xc1\xbf", b"\xe0\x80\x80", b"\xed\xa0\x80", b"\xed\xbf\xbf",
           b"\xf4\x90\x80\x80", b"\xf5\x80\x80\x80", b"\x80", b"\xbf", b"ok\xce", b"\xf0\x80\x80\x80"]
for i, text in enumerate(VALID):
    echo_case("utf8.valid_%d" % i, TEXT, text)
for i, text in enumerate(INVALID):
    fail_case("utf8.invalid_%d_1007" % i, lambda c, text=text: [c.frame(TEXT, text)], 1007)


@case("utf8.valid_split_across_fragments")
def _():
    c = Conn("/csp/ws_echo")
    text = "κόσμε".encode()
    for i in range(len(text)):
        c.send(TEXT if i == 0 else CONT, text[i:i + 1], fin=(i == len(text) - 1))
    assert c.message() == (TEXT, text)
    c.close()
    return "one byte per fragment"


@case("utf8.invalid_in_a_later_fragment_fails_before_the_end")
def _():
    c = Conn("/csp/ws_echo")
    c.send(TEXT, "good ", fin=False)
    c.send(CONT, b"\xce\xba\xff", fin=False)  # the message never ends: the failure must come anyway
    c.expect_close(1007)
    c.close()
    return "1007 without waiting for the last fragment"


fail_case("utf8.truncated_at_the_end_1007",
          lambda c: [c.frame(TEXT, b"abc\xe2\x82", fin=False), c.frame(CONT, b"")], 1007)

# ---- 7. Close handling ------------------------------------------------------------------------


@case("close.empty_answered_without_code")
def _():
    c = Conn()
    c.send(CLOSE)
    fin, rsv, op, payload = c.recv()
    assert op == CLOSE and payload == b"", (op, payload)
    c.expect_eof()
    return "empty close back, TCP closed by the server"


@case("close.1000_with_reason_answered_1000")
def _():
    c = Conn()
    c.send(CLOSE, close_payload(1000, b"bye"))
    fin, rsv, op, payload = c.recv()
    assert op == CLOSE and payload[:2] == close_payload(1000), (op, payload)
    c.expect_eof()
    return "1000"


for code in (1000, 1001, 1002, 1003, 1007, 1008, 1009, 1010, 1011, 1012, 1013, 1014, 3000, 3999, 4000, 4999):
    @case("close.valid_code_%d_echoed" % code)
    def _(code=code):
        c = Conn()
        c.send(CLOSE, close_payload(code))
        fin, rsv, op, payload = c.recv()
        assert op == CLOSE and payload[:2] == close_payload(code), close_text(payload)
        c.expect_eof()
        return "%d" % code

for code in (0, 999, 1004, 1005, 1006, 1015, 1016, 1100, 2000, 2999, 5000, 65535):
    fail_case("close.invalid_code_%d_1002" % code, lambda c, code=code: [c.frame(CLOSE, close_payload(code))], 1002)
fail_case("close.one_byte_payload_1002", lambda c: [c.frame(CLOSE, b"\x03")], 1002)
fail_case("close.reason_not_utf8_1007", lambda c: [c.frame(CLOSE, close_payload(1000, b"\xff\xfe"))], 1007)


@case("close.data_after_close_ignored")
def _():
    c = Conn()
    c.send_raw(c.frame(CLOSE, close_payload(1000)) + c.frame(TEXT, "late"))
    fin, rsv, op, payload = c.recv()
    assert op == CLOSE, (op, payload)
    c.expect_eof()
    return "no echo of the late message"


@case("close.server_initiated_by_handler")
def _():
    c = Conn()
    c.send(TEXT, "before")
    c.send(TEXT, "close 4000 done here")
    assert c.message() == (TEXT, b"before")
    fin, rsv, op, payload = c.recv()
    assert op == CLOSE and payload == close_payload(4000, b"done here"), close_text(payload)
    c.send(CLOSE, close_payload(4000))
    c.expect_eof()
    return "4000 'done here', answered, then TCP closed"


@case("close.handler_hears_the_peer_code")
def _():
    c = Conn()
    c.send(CLOSE, close_payload(3001, b"see you"))
    c.recv()
    c.expect_eof()
    deadline = time.time() + 5
    while time.time() < deadline:
        status, _, body = handshake_answer("/csp/ws_probe?last=close", headers=[])
        if body.startswith(b"3001 see you"):
            return "on_close heard 3001 'see you'"
        time.sleep(0.05)
    raise AssertionError("on_close heard %r" % body)


@case("close.handler_hears_1006_when_the_peer_vanishes")
def _():
    c = Conn()
    c.send(TEXT, "x")
    c.message()
    c.sock.close()
    deadline = time.time() + 5
    while time.time() < deadline:
        status, _, body = handshake_answer("/csp/ws_probe?last=close", headers=[])
        if body.startswith(b"1006"):
            return "on_close heard 1006"
        time.sleep(0.05)
    raise AssertionError("on_close heard %r" % body)

# ---- 9. Limits and performance ----------------------------------------------------------------


@case("limits.message_at_the_limit_echoed")
def _():
    c = Conn("/csp/ws_echo")
    body = os.urandom(ARGS.max_message)
    c.send(BINARY, body)
    assert c.message(10) == (BINARY, body)
    c.close()
    return "%d bytes" % len(body)


fail_case("limits.frame_over_the_limit_1009_before_its_payload",
          lambda c: [c.frame(BINARY, b"", length=ARGS.max_message + 1)], 1009)
fail_case("limits.fragments_over_the_limit_1009",
          lambda c: [c.frame(BINARY, b"x" * (ARGS.max_message // 2), fin=False),
                     c.frame(CONT, b"x" * (ARGS.max_message // 2), fin=False), c.frame(CONT, b"x")], 1009)


@case("performance.thousand_1k_messages_in_order")
def _():
    c = Conn("/csp/ws_echo")
    started = time.time()
    batch = b"".join(c.frame(TEXT, ("%04d" % i) + "x" * 1020) for i in range(1000))
    c.send_raw(batch)
    for i in range(1000):
        op, got = c.message()
        assert got[:4] == ("%04d" % i).encode(), "message %d came as %r" % (i, got[:4])
    c.close()
    return "1000 in %.0f ms" % ((time.time() - started) * 1000)


@case("performance.many_connections_at_once")
def _():
    conns = [Conn("/csp/ws_echo") for _ in range(50)]
    for i, c in enumerate(conns):
        c.send(TEXT, "c%d" % i)
    for i, c in enumerate(conns):
        assert c.message() == (TEXT, ("c%d" % i).encode())
        c.close()
    return "50 connections"

# ---- permessage-deflate (RFC 7692) ----------------------------------------------------------

DEFLATE = [("Sec-WebSocket-Extensions", "permessage-deflate; client_max_window_bits")]
ANSWER = "permessage-deflate; server_no_context_takeover; client_no_context_takeover"


def compress(data):
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    out = c.compress(data) + c.flush(zlib.Z_SYNC_FLUSH)
    assert out.endswith(b"\x00\x00\xff\xff")
    return out[:-4]


def inflate(data):
    return zlib.decompressobj(-15).decompress(data + b"\x00\x00\xff\xff")


@case("deflate.negotiated_without_context_takeover")
def _():
    c = Conn("/csp/ws_echo", extra=DEFLATE)
    assert c.fields.get("sec-websocket-extensions") == [ANSWER], c.fields
    c.close()
    return ANSWER


@case("deflate.not_offered_not_used")
def _():
    c = Conn("/csp/ws_echo")
    assert "sec-websocket-extensions" not in c.fields, c.fields
    c.send(TEXT, "x" * 1000)
    fin, rsv, op, payload = c.recv()
    assert rsv == 0 and payload == b"x" * 1000, (rsv, len(payload))
    c.close()
    return "plain frames"


@case("deflate.bad_offers_declined_next_one_taken")
def _():
    c = Conn("/csp/ws_echo", extra=[("Sec-WebSocket-Extensions",
                                     "permessage-deflate; server_max_window_bits=8, permessage-deflate; foo=1, "
                                     "permessage-deflate; server_max_window_bits=10")])
    assert c.fields.get("sec-websocket-extensions") == [ANSWER + "; server_max_window_bits=10"], c.fields
    c.close()
    c = Conn("/csp/ws_echo", extra=[("Sec-WebSocket-Extensions", "permessage-deflate; client_no_context_takeover; "
                                                                 "client_no_context_takeover")])
    assert "sec-websocket-extensions" not in c.fields, c.fields
    c.close()
    return "8-bit window and unknown parameters declined; a repeated parameter declines the offer"


@case("deflate.compressed_text_echoed_compressed")
def _():
    c = Conn("/csp/ws_echo", extra=DEFLATE)
    text = ("κόσμε hello " * 200).encode()
    c.send(TEXT, compress(text), rsv=4)
    fin, rsv, op, payload = c.recv()
    assert op == TEXT and rsv == 4, (op, rsv)
    assert inflate(payload) == text
    echoed = len(payload)
    c.send(TEXT, "short")  # uncompressed still allowed, both ways
    fin, rsv, op, payload = c.recv()
    assert rsv == 0 and payload == b"short", (rsv, payload)
    c.close()
    return "%d bytes sent as %d, echoed as %d" % (len(text), len(compress(text)), echoed)


@case("deflate.compressed_message_in_fragments")
def _():
    c = Conn("/csp/ws_echo", extra=DEFLATE)
    data = bytes(range(256)) * 50
    z = compress(data)
    third = len(z) // 3
    c.send(BINARY, z[:third], fin=False, rsv=4)
    c.send(CONT, z[third:2 * third], fin=False)
    c.send(CONT, z[2 * third:])
    fin, rsv, op, payload = c.recv()
    assert op == BINARY and (inflate(payload) if rsv == 4 else payload) == data
    c.close()
    return "reassembled, then inflated"


fail_case("deflate.bomb_stops_at_the_limit_1009",
          lambda c: [c.frame(BINARY, compress(b"\0" * (50 * ARGS.max_message)), rsv=4)], 1009, path="/csp/ws_echo")
fail_case("deflate.corrupt_1007", lambda c: [c.frame(BINARY, b"\xff\xfe\xfd\xfc\xfb", rsv=4)], 1007, path="/csp/ws_echo")
fail_case("deflate.compressed_text_not_utf8_1007", lambda c: [c.frame(TEXT, compress(b"ok \xed\xa0\x80"), rsv=4)],
          1007, path="/csp/ws_echo")
fail_case("deflate.rsv1_on_a_continuation_1002",
          lambda c: [c.frame(TEXT, compress(b"a"), fin=False, rsv=4), c.frame(CONT, compress(b"b"), rsv=4)], 1002,
          path="/csp/ws_echo")
fail_case("deflate.rsv1_on_a_ping_1002", lambda c: [c.frame(PING, b"", rsv=4)], 1002, path="/csp/ws_echo")

# ---- cspd: back-pressure, threads, topics -----------------------------------------------------


@case("cspd.loop_sender_told_again_past_the_mark")
def _():
    c = Conn()
    c.send(TEXT, "flood 32")  # 2 MiB from the loop, with nobody reading yet
    time.sleep(0.3)
    count, answer = 0, None
    while answer is None:
        op, data = c.message(10)
        if op == BINARY:
            count += 1
        else:
            answer = data.decode()
    again, refused = map(int, answer.split()[1:])
    assert count == 32 and refused == 0 and again > 0, (count, answer)
    c.close()
    return "32 messages, CSP_AGAIN %d times" % again


@case("cspd.loop_sender_ignoring_again_is_cut_1008")
def _():
    c = Conn()
    c.send(TEXT, "flood 200")  # 12.5 MiB: past 32 times the mark
    c.expect_close(1008, timeout=10)
    return "1008"


@case("cspd.thread_sender_waits_for_room_in_order")
def _():
    c = Conn()
    c.send(TEXT, "thread 3000")
    time.sleep(0.5)  # let the thread fill the outbox and wait
    for i in range(3000):
        op, data = c.message()
        assert data == ("t%d" % i).encode(), "message %d came as %r" % (i, data)
    c.close()
    return "3000 in order"


@case("cspd.topics_reach_every_subscriber")
def _():
    a, b, other = Conn(), Conn(), Conn()
    a.send(TEXT, "sub room")
    b.send(TEXT, "sub room")
    other.send(TEXT, "sub elsewhere")
    assert a.message() == (TEXT, b"subscribed room")
    assert b.message() == (TEXT, b"subscribed room")
    assert other.message() == (TEXT, b"subscribed elsewhere")
    for i in range(20):
        a.send(TEXT, "pub room m%d" % i)
    for c in (a, b):
        got = []
        while len(got) < 20:
            op, data = c.message()
            if data.startswith(b"published"):
                assert data == b"published 0", data
                continue
            got.append(data)
        assert got == [("m%d" % i).encode() for i in range(20)], got
    b.send(TEXT, "unsub room")
    assert b.message() == (TEXT, b"unsubscribed room")
    a.send(TEXT, "pub room after")
    op, data = a.message()
    assert data in (b"after", b"published 0")
    b.send(TEXT, "still here")
    assert b.message() == (TEXT, b"still here"), "b got a message after unsubscribing"
    other.send(TEXT, "nothing for me")
    assert other.message() == (TEXT, b"nothing for me")
    for c in (a, b, other):
        c.close()
    return "20 messages in order to both, none after unsubscribe or to another topic"


@case("cspd.publisher_told_when_a_subscriber_does_not_read")
def _():
    slow, publisher = Conn(), Conn()
    slow.send(TEXT, "sub slow-reader")
    assert slow.message() == (TEXT, b"subscribed slow-reader")
    answers = []
    for i in range(120):  # 7 MB to a reader that reads nothing meanwhile: past the mark, short of the cut
        publisher.send(TEXT, "pubbig slow-reader 60000")
        answers.append(publisher.message(10)[1].decode())
    again = sum(1 for a in answers if a == "published 1")
    assert again > 0, "the publisher was never told CSP_AGAIN: %s" % answers[-3:]
    for i in range(120):
        op, data = slow.message(10)
        assert op == BINARY and len(data) == 60000, (op, len(data))
    slow.close()
    publisher.close()
    return "told CSP_AGAIN %d times of 120; the reader then got all 120" % again


# ---- timing (a server with --ws-ping-interval 1 --ws-idle-timeout 3) --------------------------

TIMING = []


def timing(name):
    def register(fn):
        TIMING.append((name, fn))
        return fn
    return register


@timing("timing.server_pings_a_silent_peer")
def _():
    c = Conn(pings="keep")
    fin, rsv, op, payload = c.recv(timeout=4)
    assert op == PING, op
    c.send(PONG, payload)
    fin, rsv, op, payload = c.recv(timeout=4)
    assert op == PING, op
    c.close()
    return "pinged, and again after the pong"


@timing("timing.peer_that_stops_answering_closed_1001")
def _():
    c = Conn(pings="keep")
    started = time.time()
    fin, rsv, op, payload = c.recv(timeout=4)
    assert op == PING, op
    c.expect_close(1001, timeout=6)
    return "1001 after %.1f s" % (time.time() - started)


@timing("idle.silent_peer_closed_1001")
def _():
    c = Conn(pings="keep")
    c.send(TEXT, "x")
    c.message()
    started = time.time()
    c.expect_close(1001, timeout=8)
    took = time.time() - started
    assert took > 1.5, "closed after %.1f s, before --ws-idle-timeout" % took
    return "1001 after %.1f s" % took


def main():
    global ARGS
    parser = argparse.ArgumentParser()
    parser.add_argument("port", type=int)
    parser.add_argument("--tls", action="store_true")
    parser.add_argument("--only", default="")
    parser.add_argument("--max-message", type=int, default=65536)
    parser.add_argument("--timing", action="store_true")
    parser.add_argument("--h2", action="store_true")
    ARGS = parser.parse_args()
    results = {}
    for name, fn in (TIMING if ARGS.timing else CASES):
        if not name.startswith(ARGS.only):
            continue
        if name.startswith("handshake." if ARGS.h2 else "h2."):
            continue  # HTTP/1.1's opening handshake, or HTTP/2's
        try:
            detail = fn()
            results[name] = {"ok": True, "detail": detail or ""}
        except Exception as e:  # noqa: BLE001 -- every failure is a result
            results[name] = {"ok": False, "detail": "%s: %s" % (type(e).__name__, e)}
    json.dump(results, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
