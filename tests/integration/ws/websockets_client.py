#!/usr/bin/python3
"""A real client, Debian's python3-websockets, against cspd: echo of text and binary messages of
several sizes, a subprotocol, pings answered, a close with a code heard by the handler, and over
TLS. Usage: websockets_client.py PORT TLS_PORT. Prints "ok" lines, or raises."""
import asyncio
import os
import ssl
import sys
import urllib.request

import websockets


async def main(port, tls_port):
    async with websockets.connect("ws://127.0.0.1:%d/csp/ws_echo" % port, max_size=None) as ws:
        extensions = ws.response_headers.get("Sec-WebSocket-Extensions", "")
        assert extensions.startswith("permessage-deflate"), "not compressed: %r" % extensions
        big = "compressible " * 4000
        await ws.send(big)
        assert await ws.recv() == big, "a compressed message"
        for size in (0, 1, 125, 126, 65535, 65536, 60000):
            text = "é" * (size // 2)
            await ws.send(text)
            assert await ws.recv() == text, "text of %d" % size
            data = os.urandom(size)
            await ws.send(data)
            assert await ws.recv() == data, "binary of %d" % size
        latency = await (await ws.ping(b"p"))
        print("ok echo (permessage-deflate), ping answered")
    async with websockets.connect("ws://127.0.0.1:%d/csp/ws_probe?let=in&protocol=chat" % port,
                                  subprotocols=["superchat", "chat"]) as ws:
        assert ws.subprotocol == "chat", ws.subprotocol
        await ws.send("hello")
        assert await ws.recv() == "hello"
        await ws.close(code=4321, reason="from python")
        print("ok subprotocol, close")
    with urllib.request.urlopen("http://127.0.0.1:%d/csp/ws_probe?last=close" % port) as answer:
        heard = answer.read().decode()
        assert heard.startswith("4321 from python"), heard
    async with websockets.connect("ws://127.0.0.1:%d/csp/ws_probe?let=in" % port) as ws:
        await ws.send("close 4000 server says bye")
        try:
            await ws.recv()
            raise AssertionError("no close")
        except websockets.ConnectionClosed as closed:
            assert closed.rcvd.code == 4000 and closed.rcvd.reason == "server says bye", closed
        print("ok server close")
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    async with websockets.connect("wss://127.0.0.1:%d/csp/ws_echo" % tls_port, ssl=ctx) as ws:
        await ws.send("over tls")
        assert await ws.recv() == "over tls"
        big = os.urandom(60000)
        await ws.send(big)
        assert await ws.recv() == big
        print("ok tls")


asyncio.run(main(int(sys.argv[1]), int(sys.argv[2])))
