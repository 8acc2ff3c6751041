#!/usr/bin/python3
# SPDX-License-Identifier: BSD-2-Clause
#
# Hostile WebSocket input against zernel-exporter's feed.  Each bad client is
# a raw socket speaking just enough RFC 6455 to misbehave; each must be
# closed with the right status code, while a well-behaved client
# (python3-websockets) connected throughout keeps receiving snapshots.
# Every case runs twice: sent after the handshake's answer, and sent in the
# same packet as the handshake, as a client that does not wait would.
# Exit status 0 when every check holds; otherwise the first failure is printed.
#
# usage: ws_bad_frames.py WS_PORT INTERVAL_MS METRICS_PORT
import asyncio
import json
import os
import re
import socket
import struct
import sys
import time
import urllib.request

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


def connect(port, early=b""):
    """A raw client after its handshake: the socket and what came after the answer.

    early goes in the same send as the handshake."""
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.sendall(("GET / HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nUpgrade: websocket\r\n"
               "Connection: Upgrade\r\nSec-WebSocket-Key: %s\r\n"
               "Sec-WebSocket-Version: 13\r\n\r\n" % (port, KEY)).encode() + early)
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


def wait_control(s, buf, timeout, want_op):
    """Reads server frames until a close frame or one of opcode want_op.

    Returns ("close", code), (want_op, payload), ("eof", None) or (None, None)
    on timeout."""
    deadline = time.monotonic() + timeout
    s.settimeout(timeout)
    try:
        while time.monotonic() < deadline:
            h, buf = read_exact(s, buf, 2)
            if h is None:
                return "eof", None
            op, n = h[0] & 0x0F, h[1] & 0x7F
            if h[1] & 0x80:
                fail("the server sent a masked frame")
            if n == 126:
                e, buf = read_exact(s, buf, 2)
                n = struct.unpack("!H", e)[0]
            elif n == 127:
                e, buf = read_exact(s, buf, 8)
                n = struct.unpack("!Q", e)[0]
            payload, buf = read_exact(s, buf, n)
            if payload is None:
                return "eof", None
            if op == 0x8:
                code = struct.unpack("!H", payload[:2])[0] if len(payload) >= 2 else 1005
                return "close", code
            if op == want_op:
                return op, payload
    except socket.timeout:
        pass
    return None, None


def wait_close(s, buf, timeout):
    """The code of the server's close frame, "eof", or None on timeout."""
    kind, value = wait_control(s, buf, timeout, None)
    return value if kind == "close" else kind


def closed_soon(s, timeout):
    """True when the server closes the TCP connection within timeout."""
    s.settimeout(timeout)
    try:
        while s.recv(65536):
            pass
        return True
    except (socket.timeout, ConnectionResetError):
        return False


LONG = b"a" * 70000
CASES = [
    # (what, bytes to send, expected close code; None = stays open)
    ("reserved opcode 0x3", frame(0x3, b"x"), 1002),
    ("reserved opcode 0xB", frame(0xB, b"x"), 1002),
    ("RSV1 without an extension", frame(0x1, b"x", rsv=4), 1002),
    ("unmasked frame", frame(0x1, b"hello", mask=False), 1002),
    ("unmasked ping", frame(0x9, b"hi", mask=False), 1002),
    ("ping over 125 bytes", frame(0x9, b"p" * 126), 1002),
    ("fragmented ping", frame(0x9, b"p", fin=False), 1002),
    ("continuation outside a message", frame(0x0, b"x"), 1002),
    ("new message inside a fragmented one", frame(0x1, b"a", fin=False)
     + frame(0x1, b"b"), 1002),
    ("64-bit length with its top bit set",
     struct.pack("!BBQ", 0x81, 0xFF, 1 << 63) + b"\x00" * 4, 1002),
    ("close with a one-byte payload", frame(0x8, b"\x03"), 1002),
    ("close with a reserved code 1005", frame(0x8, struct.pack("!H", 1005)), 1002),
    ("close with code 999", frame(0x8, struct.pack("!H", 999)), 1002),
    ("close reason not UTF-8", frame(0x8, struct.pack("!H", 1000) + b"\xff"), 1007),
    ("binary message", frame(0x2, b"\x00\x01\x02"), 1003),
    ("message over the size limit", frame(0x1, b"a" * 5000), 1009),
    ("message over the size limit, 64-bit length", frame(0x1, LONG), 1009),
    ("oversized message in fragments", frame(0x1, b"a" * 3000, fin=False)
     + frame(0x0, b"b" * 3000), 1009),
    ("invalid UTF-8 text", frame(0x1, b"\xff\xfe\xfd"), 1007),
    ("UTF-16 surrogate in text", frame(0x1, b"\xed\xa0\x80"), 1007),
    ("overlong UTF-8 in text", frame(0x1, b"\xc0\xaf"), 1007),
    ("text ending inside a character", frame(0x1, "é".encode()[:1]), 1007),
    ("ordinary text (ignored)", frame(0x1, b'{"hello": 1}'), None),
    ("a character split across fragments (ignored)",
     frame(0x1, "é".encode()[:1], fin=False) + frame(0x0, "é".encode()[1:]), None),
    ("ping inside a fragmented message (answered)", frame(0x1, b"a", fin=False)
     + frame(0x9, b"") + frame(0x0, b"b"), None),
    ("empty text and pong (ignored)", frame(0x1, b"") + frame(0xA, b"x"), None),
]


def bad_input_total(metrics_port):
    body = urllib.request.urlopen("http://127.0.0.1:%d/metrics" % metrics_port,
                                  timeout=5).read().decode()
    m = re.search(r"^zernel_exporter_ws_bad_input_total (\S+)$", body, re.M)
    if not m:
        fail("zernel_exporter_ws_bad_input_total missing from /metrics")
    return int(float(m.group(1)))


# Clients closed for what they sent: the cases with a code, each sent after
# the handshake and with it, and the byte-by-byte client below.
EXPECTED_BAD_INPUT = 2 * sum(1 for case in CASES if case[2]) + 1


def connect_and_send(port, data, with_handshake):
    if with_handshake:
        return connect(port, data)
    s, rest = connect(port)
    s.sendall(data)
    return s, rest


def run_cases(port):
    results = []
    for with_handshake in (False, True):
        when = " (with the handshake)" if with_handshake else ""
        for what, data, want in CASES:
            s, rest = connect_and_send(port, data, with_handshake)
            got = wait_close(s, rest, 3 if want else 1.5)
            if got != want:
                fail("%s%s: expected close %r, got %r" % (what, when, want, got))
            if want and not closed_soon(s, 3):
                fail("%s%s: the connection stayed open after the close frame" % (what, when))
            s.close()
            results.append("%s%s -> %s" % (what, when, got if got else "still open"))

    # Byte by byte: a header and payload split over many reads.
    s, rest = connect(port)
    for b in frame(0x1, b"slow") + frame(0x1, b"\xff"):
        s.sendall(bytes([b]))
        time.sleep(0.005)
    got = wait_close(s, rest, 3)
    s.close()
    if got != 1007:
        fail("byte-by-byte frames: expected close 1007 on the second, got %r" % got)
    results.append("frames sent one byte at a time -> first ignored, second %s" % got)

    # A ping is answered with a pong carrying its payload.
    for with_handshake in (False, True):
        s, rest = connect_and_send(port, frame(0x9, b"are you there"), with_handshake)
        kind, payload = wait_control(s, rest, 3, 0xA)
        s.close()
        if kind != 0xA or payload != b"are you there":
            fail("ping%s: expected a pong with its payload, got %r %r"
                 % (" with the handshake" if with_handshake else "", kind, payload))
    results.append("ping, after the handshake and with it -> pong with the same payload")

    # A client's close is answered with the same code, then TCP closes.
    for code in (1000, 1001, 3000, 4999):
        s, rest = connect_and_send(port, frame(0x8, struct.pack("!H", code) + b"bye"),
                                   code == 3000)
        got = wait_close(s, rest, 3)
        if got != code:
            fail("client close %d: expected the same code back, got %r" % (code, got))
        if not closed_soon(s, 3):
            fail("client close %d: the server did not close TCP" % code)
        s.close()
    s, rest = connect(port)
    s.sendall(frame(0x8, b""))
    got = wait_close(s, rest, 3)
    s.close()
    if got not in (1000, 1005):
        fail("empty client close: expected 1000, got %r" % got)
    results.append("client close 1000/1001/3000 (with the handshake)/4999/empty -> echoed, "
                   "TCP closed")
    return results


async def main():
    port, interval_ms, metrics_port = (int(a) for a in sys.argv[1:4])
    bad_before = bad_input_total(metrics_port)
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
    bad = bad_input_total(metrics_port) - bad_before
    if bad != EXPECTED_BAD_INPUT:
        fail("zernel_exporter_ws_bad_input_total grew by %d, expected %d"
             % (bad, EXPECTED_BAD_INPUT))
    for r in results:
        print(r)
    print("good client: %d snapshots while %d bad clients were closed" % (count, bad))


asyncio.run(main())
