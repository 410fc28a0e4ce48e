"""Stalls HTTP/2 streams on purpose, as an attacker holding a server's memory would: each of
CONNECTIONS h2c connections sets every stream's window to 0, asks for PATH on STREAMS streams,
then reads for SECONDS without ever opening a window. Prints one JSON object: the RST_STREAMs
each connection received, by error code.

Usage: stall_streams.py PORT CONNECTIONS STREAMS SECONDS [--path PATH]"""
import argparse
import json
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
    parser.add_argument("seconds", type=float)
    parser.add_argument("--path", default="/csp/hello")
    args = parser.parse_args()
    h2.ARGS = argparse.Namespace(port=args.port, tls=False)
    conns = h2.stalled_connections(args.connections, args.streams, args.path)
    resets = [{} for _ in conns]
    deadline = time.time() + args.seconds
    while time.time() < deadline:
        for c, got in zip(conns, resets):
            while True:
                f = c.read_frame(timeout=0.01)
                if f is None:
                    break
                if f[0] == h2.RST_STREAM:
                    code = struct.unpack(">I", f[3][:4])[0]
                    name = h2.ERRORS[code] if code < len(h2.ERRORS) else str(code)
                    got[name] = got.get(name, 0) + 1
    print(json.dumps({"resets": resets}))


if __name__ == "__main__":
    main()
