#!/usr/bin/python3
"""Reads a streamed answer over HTTP/1.1 in CODING and checks that every chunk, as it comes,
decodes to whole lines (each piece the handler wrote was flushed through the compressor, so a
client need not wait for more), with each coding's own streaming decoder.
  compressed_stream.py PORT TARGET CODING [MIN_CHUNKS]
Prints the decoded body; exits 1 with the reason if a chunk leaves a line half decoded, or if fewer
than MIN_CHUNKS chunks came (a coder that held pieces back would send them all in one at the end)."""
import socket
import sys
import zlib

import brotli
import zstandard

port, target, coding = int(sys.argv[1]), sys.argv[2], sys.argv[3]
min_chunks = int(sys.argv[4]) if len(sys.argv) > 4 else 1
if coding == "gzip":
    decoder = zlib.decompressobj(wbits=31)
    decode = decoder.decompress
elif coding == "br":
    decoder = brotli.Decompressor()
    decode = decoder.process
else:
    decoder = zstandard.ZstdDecompressor().decompressobj()
    decode = decoder.decompress

conn = socket.create_connection(("127.0.0.1", port), timeout=10)
conn.sendall(f"GET {target} HTTP/1.1\r\nHost: t\r\nAccept-Encoding: {coding}\r\n\r\n".encode())
data = b""
while b"\r\n\r\n" not in data:
    more = conn.recv(65536)
    if not more:
        sys.exit("closed before the head")
    data += more
head, data = data.split(b"\r\n\r\n", 1)
fields = {}
for line in head.decode().split("\r\n")[1:]:
    name, value = line.split(": ", 1)
    fields[name.lower()] = value
if fields.get("content-encoding") != coding:
    sys.exit(f"Content-Encoding {fields.get('content-encoding')!r}, not {coding}")
if fields.get("transfer-encoding") != "chunked":
    sys.exit("not chunked")
if "accept-encoding" not in fields.get("vary", "").lower():
    sys.exit("no Vary: Accept-Encoding")


def read_more():
    global data
    more = conn.recv(65536)
    if not more:
        sys.exit("closed mid-stream")
    data += more


decoded = b""
chunks = 0
while True:
    while b"\r\n" not in data:
        read_more()
    size_line, data = data.split(b"\r\n", 1)
    size = int(size_line, 16)
    while len(data) < size + 2:
        read_more()
    chunk, data = data[:size], data[size + 2:]
    if size == 0:
        break
    chunks += 1
    decoded += decode(chunk)
    if not decoded.endswith(b"\n"):
        sys.exit(f"chunk {chunks} left a line half decoded: {decoded[-40:]!r}")
if chunks < min_chunks:
    sys.exit(f"{chunks} chunk(s), not the {min_chunks} written: the coder held pieces back")
sys.stdout.write(decoded.decode())
