#!/usr/bin/python3
# SPDX-License-Identifier: BSD-2-Clause
#
# A feed push and /api/stalls of the same publish, for
# tests/exporter/check_feed_stall_sites.c: reads pushes until one names a
# stall site, fetches /api/stalls, then reads pushes for a while and keeps
# the last.  When that one has the first's generation, no publish came
# between the two pushes, so /api/stalls, read between them, showed that
# publish too: prints the first push on one line and /api/stalls on the
# next.  Otherwise it tries again.
#
# usage: feed_stall_sites.py WS_PORT METRICS_PORT [TIMEOUT_S]
import asyncio
import json
import sys
import time
import urllib.request

import websockets


async def latest(ws, seconds):
    """The last push that arrives within seconds (None when none does)."""
    last, end = None, time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            last = await asyncio.wait_for(ws.recv(), max(end - time.monotonic(), 0.01))
        except asyncio.TimeoutError:
            break
    return last


def has_site(frame):
    return any(p.get("stall_sites") for p in frame.get("processes") or [])


async def main():
    ws_port, metrics_port = int(sys.argv[1]), int(sys.argv[2])
    timeout = float(sys.argv[3]) if len(sys.argv) > 3 else 30
    deadline = time.monotonic() + timeout
    url = "http://127.0.0.1:%d/api/stalls" % metrics_port
    async with websockets.connect("ws://127.0.0.1:%d/" % ws_port, max_size=None) as ws:
        while time.monotonic() < deadline:
            raw = await latest(ws, 0.3)
            if raw is None or not has_site(json.loads(raw)):
                continue
            with urllib.request.urlopen(url, timeout=5) as r:
                stalls = r.read().decode()
            after = await latest(ws, 0.5)
            if after and json.loads(after)["generation"] == json.loads(raw)["generation"]:
                print(raw.replace("\n", " "))
                print(stalls.replace("\n", " "))
                return 0
    print("FAIL: no push with a stall site and /api/stalls of one publish within %g s" % timeout)
    return 1


sys.exit(asyncio.run(main()))
