#!/usr/bin/python3
# SPDX-License-Identifier: BSD-2-Clause
#
# A hostile WebSocket feed for tests/cli/check_cli.c.  To every client it
# sends junk, then one real snapshot (a recording of zernel-exporter's feed,
# tests/fixtures/feed-*.json, byte for byte), and repeats.
#   junk: not snapshots at all (not JSON, truncated JSON, not an object,
#         no gpu_utilization array, deep nesting, a frame over the client's
#         16 MiB limit, a binary frame): a client must skip every one;
#   odd:  the junk plus the recorded snapshot spoilt: wrong types,
#         impossible values, huge tables, escape sequences in strings: a
#         client must survive.
# Prints "ready" once listening.
#
#   fake_feed.py PORT junk|odd FIXTURE
import asyncio
import copy
import json
import sys

import websockets


def junk():
    yield "this is not json"
    yield json.dumps({"gpus": [], "note": "no gpu_utilization"})
    yield "{\"gpus\": ["
    yield "[]"
    yield "null"
    yield "{} trailing"
    yield "[" * 100000 + "]" * 100000
    yield "{\"gpu_utilization\": [], \"a\": \"" + "x" * (17 << 20) + "\"}"
    yield b"\x00\xff\xfe binary frame"


def spoilt(snap):
    """The recorded snapshot with every kind of nonsense put in."""
    bad = copy.deepcopy(snap)
    bad.update({"gpus": 5, "processes": {"pid": 1}, "nccl": [1, "a", None],
                "alerts": [None, 3, {"labels": 5}], "telemetry": [],
                "cuda_latency_p99_us": "fast"})
    yield json.dumps(bad)
    bad = copy.deepcopy(snap)
    for row in bad["gpu_utilization"]:
        row["pid"], row["current_bytes"] = -1, 1e300
    yield json.dumps(bad)
    bad = copy.deepcopy(snap)
    bad["gpus"] = [{"gpu_id": i, "total_bytes": 1, "used_bytes": 2} for i in range(20000)]
    bad["processes"] = [{"pid": i, "comm": "\u00e9\u4e2d\x07" * 50} for i in range(10000)]
    yield json.dumps(bad)
    yield json.dumps(snap).replace("\"age_ms\":", "\"age_ms\":-1e999,\"x\":", 1)
    bad = copy.deepcopy(snap)
    for p in bad["processes"]:
        p["comm"] = "\u0000\u001b]0;pwned\u0007"
    bad["alerts"] = [{"alertname": "\u001b[31mX", "state": "firing", "summary": 5}]
    yield json.dumps(bad)


async def handler(ws, path=None):
    try:
        while True:
            for m in junk():
                await ws.send(m)
                await asyncio.sleep(0.01)
            if MODE == "odd":
                for m in spoilt(SNAP):
                    await ws.send(m)
                    await asyncio.sleep(0.01)
            await ws.send(RECORDED)
            # The real one stays the newest for a while: a client keeps only
            # the newest message it has not taken yet, and on a busy machine
            # the spoilt snapshot with 20,000 GPUs before it can hold the
            # client for most of a second.
            await asyncio.sleep(3)
    except websockets.ConnectionClosed:
        pass


async def main(port):
    async with websockets.serve(handler, "127.0.0.1", port, max_size=None,
                                compression=None):
        print("ready", flush=True)
        await asyncio.Future()


if __name__ == "__main__":
    MODE = sys.argv[2]
    with open(sys.argv[3]) as f:
        RECORDED = f.read()
    SNAP = json.loads(RECORDED)
    asyncio.run(main(int(sys.argv[1])))
