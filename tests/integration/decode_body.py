#!/usr/bin/python3
"""Decodes FILE in CODING (gzip, br, zstd or identity) with each coding's own Python decoder
(zlib/gzip, python3-brotli, python3-zstandard) and writes the bytes to standard output."""
import gzip
import sys

import brotli
import zstandard

coding, path = sys.argv[1], sys.argv[2]
data = open(path, "rb").read()
if coding == "gzip":
    out = gzip.decompress(data)
elif coding == "br":
    out = brotli.decompress(data)
elif coding == "zstd":
    out = zstandard.ZstdDecompressor().stream_reader(data).read()
else:
    out = data
sys.stdout.buffer.write(out)
