#!/usr/bin/python3
# SPDX-License-Identifier: BSD-2-Clause
#
# Holds N WebSocket connections to the exporter's feed for SECONDS and reads
# (and discards) everything sent, so that the exporter, not this client, is
# what gets measured.  Raw sockets and one selector: no frame parsing beyond
# the handshake.  The exporter takes at most 64 clients from one address, so
# the connections come from 60 a loopback address (127.0.0.1, .2, ...).
# Prints how many connected and how many bytes arrived.
#
# usage: ws_clients.py PORT N SECONDS
import selectors
import socket
import sys
import time

port, n, seconds = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
req = ("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n"
       "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
       "Sec-WebSocket-Version: 13\r\n\r\n").encode()
sel = selectors.DefaultSelector()
ok = 0
PER_ADDRESS = 60
for i in range(n):
    k = i // PER_ADDRESS
    source = "127.0.%d.%d" % (k // 250, 1 + k % 250)
    s = socket.create_connection(("127.0.0.1", port), timeout=10,
                                 source_address=(source, 0))
    s.sendall(req)
    head = b""
    while b"\r\n\r\n" not in head:
        head += s.recv(4096)
    if head.startswith(b"HTTP/1.1 101"):
        ok += 1
    s.setblocking(False)
    sel.register(s, selectors.EVENT_READ)
print("connected %d/%d clients" % (ok, n), flush=True)
total = 0
closed = 0
end = time.monotonic() + seconds
while time.monotonic() < end:
    for key, _ in sel.select(timeout=0.5):
        try:
            data = key.fileobj.recv(1 << 20)
        except BlockingIOError:
            continue
        if not data:
            sel.unregister(key.fileobj)
            closed += 1
            continue
        total += len(data)
print("received %.1f MB in %.0f s over %d clients (%d closed by the server)"
      % (total / 1e6, seconds, ok, closed), flush=True)
