#!/usr/bin/python3
# SPDX-License-Identifier: BSD-2-Clause
#
# Hostile WebSocket input against zernel-exporter's feed.  Each bad client is
# a raw socket speaking just enough RFC 6455 to misbehave; each must be
# closed with the right status code, while a well-behaved client
# (python3-websockets) connected throughout keeps receiving snapshots.
# Exit status 0 when every check holds; otherwise the first failure is printed.
#
# usage: ws_bad_frames.py WS_PORT INTERVAL_MS
import asyncio
import json
import os
import socket
import struct
import sys
import time

import websockets

KEY = "dGhlIHNhbXBsZSBub25jZQ=="


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def frame(opcode, payload, mask=True, fin=True, rsv=0):
    b0 = (0x80 if fin else 0) | (rsv << 4) | opcode
    n = len(payload)
    if n < 126:
        head = struct.pack("!BB", b0, (0x80 if mask else 0) | n)
    elif n < 65536:
        head = struct.pack("!BBH", b0, (0x80 if mask else 0) | 126, n)
    else:
        head = struct.pack("!BBQ", b0, (0x80 if mask else 0) | 127, n)
    if not mask:
        return head + payload
    key = os.urandom(4)
    return head + key + bytes(c ^ key[i % 4] for i, c in enumerate(payload))


def connect(port):
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.sendall(("GET / HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nUpgrade: websocket\r\n"
               "Connection: Upgrade\r\nSec-WebSocket-Key: %s\r\n"
               "Sec-WebSocket-Version: 13\r\n\r\n" % (port, KEY)).encode())
    buf = b""
    while b"\r\n\r\n" not in buf:
        chunk = s.recv(4096)
        if not chunk:
            fail("handshake: connection closed")
        buf += chunk
    head, rest = buf.split(b"\r\n\r\n", 1)
    if not head.startswith(b"HTTP/1.1 101"):
        fail("handshake refused: %r" % head[:80])
    return s, rest


def read_exact(s, buf, n):
    while len(buf) < n:
        chunk = s.recv(65536)
        if not chunk:
            return None, buf
        buf += chunk
    return buf[:n], buf[n:]


def wait_close(s, buf, timeout):
    """Reads server frames until a close frame; returns its code, or None on timeout."""
    deadline = time.monotonic() + timeout
    s.settimeout(timeout)
    try:
        while time.monotonic() < deadline:
            h, buf = read_exact(s, buf, 2)
            if h is None:
                return "eof"
            op, n = h[0] & 0x0F, h[1] & 0x7F
            if n == 126:
                e, buf = read_exact(s, buf, 2)
                n = struct.unpack("!H", e)[0]
            elif n == 127:
                e, buf = read_exact(s, buf, 8)
                n = struct.unpack("!Q", e)[0]
            payload, buf = read_exact(s, buf, n)
            if payload is None:
                return "eof"
            if op == 0x8:
                return struct.unpack("!H", payload[:2])[0] if len(payload) >= 2 else 1005
    except socket.timeout:
        pass
    return None


CASES = [
    # (what, bytes to send, expected close code; None = stays open)
    ("reserved opcode 0x3", frame(0x3, b"x"), 1002),
    ("RSV1 without an extension", frame(0x1, b"x", rsv=4), 1002),
    ("binary message", frame(0x2, b"\x00\x01\x02"), 1003),
    ("message over the size limit", frame(0x1, b"a" * 5000), 1009),
    ("oversized message in fragments", frame(0x1, b"a" * 3000, fin=False)
     + frame(0x0, b"b" * 3000), 1009),
    ("invalid UTF-8 text", frame(0x1, b"\xff\xfe\xfd"), 1007),
    ("ordinary text (ignored)", frame(0x1, b'{"hello": 1}'), None),
]


def run_cases(port):
    results = []
    for what, data, want in CASES:
        s, rest = connect(port)
        s.sendall(data)
        got = wait_close(s, rest, 3 if want else 1.5)
        s.close()
        if got != want:
            fail("%s: expected close %r, got %r" % (what, want, got))
        results.append("%s -> %s" % (what, got if got else "still open"))
    # RFC 6455 says a server must close on an unmasked client frame, but
    # libwebsockets 4.1 does not check the mask bit.  Its payload is ignored
    # like any text; what happens is reported, not asserted.
    s, rest = connect(port)
    s.sendall(frame(0x1, b"hello", mask=False))
    got = wait_close(s, rest, 1.5)
    s.close()
    results.append("unmasked frame (not checked by libwebsockets 4.1) -> %s"
                   % (got if got else "still open, ignored"))
    return results


async def main():
    port, interval_ms = int(sys.argv[1]), int(sys.argv[2])
    async with websockets.connect("ws://127.0.0.1:%d/" % port, max_size=None) as good:
        count = 0

        async def reader():
            nonlocal count
            async for msg in good:
                json.loads(msg)
                count += 1

        task = asyncio.create_task(reader())
        start = time.monotonic()
        results = await asyncio.to_thread(run_cases, port)
        elapsed = time.monotonic() - start
        await asyncio.sleep(2 * interval_ms / 1000)
        if task.done():
            fail("the good client's connection ended: %r" % task.exception())
        expected = elapsed / (interval_ms / 1000)
        if count < 0.5 * expected:
            fail("the good client got %d snapshots in %.1f s (interval %d ms)"
                 % (count, elapsed, interval_ms))
        task.cancel()
    for r in results:
        print(r)
    print("good client: %d snapshots while bad clients were closed" % count)


asyncio.run(main())
