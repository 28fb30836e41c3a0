"""Decodes a PNG with the standard library alone and prints how much is on it.

Usage: png_stats.py FILE
Prints JSON: width, height, the fraction of pixels that differ from the most common
colour, and the number of distinct colours. Handles 8-bit greyscale, RGB and RGBA,
non-interlaced (what Chromium writes).
"""
import json
import struct
import sys
import zlib
from collections import Counter


def paeth(a, b, c):
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    if pa <= pb and pa <= pc:
        return a
    return b if pb <= pc else c


def main():
    data = open(sys.argv[1], "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, ihdr = 8, b"", None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            ihdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    width, height, depth, colour, _, _, interlace = ihdr
    assert depth == 8 and interlace == 0, ihdr
    channels = {0: 1, 2: 3, 6: 4, 4: 2}[colour]
    raw = zlib.decompress(idat)
    stride = width * channels
    prev = bytearray(stride)
    counts = Counter()
    for y in range(height):
        start = y * (stride + 1)
        ftype = raw[start]
        line = bytearray(raw[start + 1:start + 1 + stride])
        for i in range(stride):
            a = line[i - channels] if i >= channels else 0
            b = prev[i]
            c = prev[i - channels] if i >= channels else 0
            if ftype == 1:
                line[i] = (line[i] + a) & 255
            elif ftype == 2:
                line[i] = (line[i] + b) & 255
            elif ftype == 3:
                line[i] = (line[i] + ((a + b) >> 1)) & 255
            elif ftype == 4:
                line[i] = (line[i] + paeth(a, b, c)) & 255
        counts.update(bytes(line[i:i + channels]) for i in range(0, stride, channels))
        prev = line
    total = width * height
    background = counts.most_common(1)[0][1]
    print(json.dumps({"width": width, "height": height, "non_background": 1 - background / total,
                      "colours": len(counts)}))


if __name__ == "__main__":
    main()
