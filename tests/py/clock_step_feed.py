#!/usr/bin/python3
# SPDX-License-Identifier: BSD-2-Clause
#
# A WebSocket client (python3-websockets) that stays on zernel-exporter's
# feed while a test steps the clocks under it (tests/exporter/check_clock_step.c).
# Every frame must say the collector is up and fresh (age_ms in [0, LIMIT_MS]),
# hold no negative or non-finite number, keep each p50 at or below its p99
# and every firing alert's startsAt at or after its activeAt, on one
# generation; frames must keep coming (no gap above 3 s).  Exit status 0
# when every check holds; otherwise the first failed check is printed.
#
# usage: clock_step_feed.py WS_PORT SECONDS LIMIT_MS
import asyncio
import json
import math
import sys
import time

import websockets


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def numbers(obj, path=""):
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from numbers(v, path + "." + k)
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from numbers(v, "%s[%d]" % (path, i))
    elif isinstance(obj, (int, float)) and not isinstance(obj, bool):
        yield path, obj


def check(frame, limit_ms):
    if frame.get("collector_up") is not True or frame.get("status") != "ok":
        fail("collector reported %s (%s)" % (frame.get("status"), frame.get("stale_reason")))
    if not 0 <= frame["age_ms"] <= limit_ms:
        fail("age_ms %s outside [0, %d]" % (frame["age_ms"], limit_ms))
    seen = dict(numbers(frame))
    for path, v in seen.items():
        if not math.isfinite(v) or v < 0:
            fail("%s is %r" % (path, v))
        if "_p50_" in path:
            p99 = seen.get(path.replace("_p50_", "_p99_"))
            if p99 is not None and v > p99:
                fail("%s %r above its p99 %r" % (path, v, p99))
    for a in frame.get("alerts", []):
        if a.get("state") == "firing" and a["startsAt"] < a["activeAt"]:
            fail("alert %s startsAt %s before activeAt %s"
                 % (a["alertname"], a["startsAt"], a["activeAt"]))


async def main(port, seconds, limit_ms):
    frames, generation = 0, None
    async with websockets.connect("ws://127.0.0.1:%d" % port, open_timeout=5,
                                  max_size=None) as ws:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            try:
                frame = json.loads(await asyncio.wait_for(ws.recv(), 3))
            except asyncio.TimeoutError:
                fail("no frame for 3 s after %d frames" % frames)
            check(frame, limit_ms)
            if generation is not None and frame["generation"] != generation:
                fail("generation changed from %s to %s" % (generation, frame["generation"]))
            generation = frame["generation"]
            frames += 1
    print("clock_step_feed: %d frames, all sane" % frames)
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]))))
