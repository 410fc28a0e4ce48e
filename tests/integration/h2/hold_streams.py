"""--client-connections over HTTP/2: CONNECTIONS h2c connections from one address are opened
first, then each asks for PATH (an answer that never comes: the stream stays open) on STREAMS
streams. Streams the server refuses come back as RST_STREAM REFUSED_STREAM at once; the others
stay open with no answer. Then one more connection, while they are all held: its GOAWAY's code.
Prints "open N refused M; one more connection: GOAWAY CODE" (and anything else the server sent),
with every connection still open until it has counted.

Usage: hold_streams.py PORT CONNECTIONS STREAMS PATH"""
import argparse
import os
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import h2_frames as h2  # noqa: E402  (its Conn: frames out, frames in)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("port", type=int)
    parser.add_argument("connections", type=int)
    parser.add_argument("streams", type=int)
    parser.add_argument("path")
    args = parser.parse_args()
    h2.ARGS = argparse.Namespace(port=args.port, tls=False)
    conns = [h2.Conn() for _ in range(args.connections)]
    for c in conns:  # every connection is accepted (and counted) before any stream opens
        c.wait_for(lambda f: f[0] == h2.SETTINGS and not f[1] & h2.ACK, 3.0)
    refused, other = 0, []
    for c in conns:
        c.send(b"".join(c.request(2 * i + 1, path=args.path) for i in range(args.streams)))
        deadline = time.time() + 1.0
        while time.time() < deadline:  # this connection's refusals, before the next one asks
            f = c.read_frame(max(0.0, deadline - time.time()))
            if f is None:
                break
            kind, _, stream, payload = f
            if kind == h2.RST_STREAM and struct.unpack(">I", payload[:4])[0] == h2.ERRORS.index("REFUSED_STREAM"):
                refused += 1
            elif kind not in (h2.SETTINGS, h2.WINDOW_UPDATE, h2.PING):
                other.append((kind, stream))
    opened = args.connections * args.streams - refused
    # One more connection while every unit is held: refused as a whole, before any stream.
    extra = h2.Conn()
    extra.send(extra.request(1, path=args.path))
    print(f"open {opened} refused {refused}" + (f" other {other}" if other else "") +
          f"; one more connection: GOAWAY {extra.goaway(3.0)}")
    extra.close()
    for c in conns:
        c.close()


if __name__ == "__main__":
    main()
