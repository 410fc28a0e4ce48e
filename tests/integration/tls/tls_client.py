#!/usr/bin/env python3
"""A TLS client for cspd's HTTPS tests, on Python's ssl module: connects to 127.0.0.1:PORT,
optionally as SNI name NAME and at one TLS version, makes requests on one keep-alive
connection, and prints what it saw as one JSON object: the version, the certificate's SHA-256
and subject names, whether the session was resumed, and each response's status and body size.

--hold FILE makes the first request, then creates FILE.ready and waits for FILE to exist
before making the rest on the same connection (a certificate can be rotated meanwhile)."""
import argparse
import hashlib
import http.client
import json
import os
import socket
import ssl
import sys
import time

VERSIONS = {"1.0": ssl.TLSVersion.TLSv1, "1.1": ssl.TLSVersion.TLSv1_1,
            "1.2": ssl.TLSVersion.TLSv1_2, "1.3": ssl.TLSVersion.TLSv1_3}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("port", type=int)
    ap.add_argument("--sni")
    ap.add_argument("--tls", choices=VERSIONS)
    ap.add_argument("--path", action="append")
    ap.add_argument("--hold")
    ap.add_argument("--header", action="append", default=[])
    args = ap.parse_args()

    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    if args.tls:
        if args.tls in ("1.0", "1.1"):
            ctx.set_ciphers("DEFAULT@SECLEVEL=0")  # or this client would not even offer them
        ctx.minimum_version = ctx.maximum_version = VERSIONS[args.tls]
    ctx.set_alpn_protocols(["http/1.1"])
    out = {"ok": False}
    try:
        raw = socket.create_connection(("127.0.0.1", args.port), timeout=10)
        sock = ctx.wrap_socket(raw, server_hostname=args.sni)
    except (ssl.SSLError, OSError) as e:
        out["error"] = str(e)
        print(json.dumps(out))
        return
    der = sock.getpeercert(binary_form=True)
    out.update(ok=True, version=sock.version(), alpn=sock.selected_alpn_protocol(),
               sha256=":".join("%02X" % b for b in hashlib.sha256(der).digest()), responses=[])
    conn = http.client.HTTPConnection("127.0.0.1", args.port, timeout=10)
    conn.sock = sock
    headers = dict(h.split(": ", 1) for h in args.header)
    for i, path in enumerate(args.path or ["/csp/hello"]):
        if i == 1 and args.hold:
            open(args.hold + ".ready", "w").close()
            while not os.path.exists(args.hold):
                time.sleep(0.02)
        try:
            conn.request("GET", path, headers=headers)
            r = conn.getresponse()
            body = r.read()
            out["responses"].append({"status": r.status, "length": len(body),
                                     "sha256": hashlib.sha256(body).hexdigest(),
                                     "content_range": r.getheader("Content-Range")})
        except (OSError, http.client.HTTPException) as e:
            out["responses"].append({"error": str(e)})
    print(json.dumps(out))


if __name__ == "__main__":
    main()
