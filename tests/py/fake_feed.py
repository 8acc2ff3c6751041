#!/usr/bin/python3
# SPDX-License-Identifier: BSD-2-Clause
#
# A hostile WebSocket feed for tests/check_cli.c.  To every client it sends
# junk, then one valid snapshot whose figures the test knows, and repeats.
#   junk: not snapshots at all (not JSON, truncated JSON, not an object,
#         no gpu_utilization array, deep nesting, a frame over the client's
#         16 MiB limit, a binary frame): a client must skip every one;
#   odd:  the junk plus snapshots with wrong types, impossible values, huge
#         tables and escape sequences in strings: a client must survive.
# Prints "ready" once listening.
#
#   fake_feed.py PORT junk|odd
import asyncio
import json
import sys

import websockets

GOOD = {
    "gpu_utilization": [{"key": "4242:0", "current_bytes": 123456789, "peak_bytes": 223456789}],
    "cuda_latency_p50_us": 7.5, "cuda_latency_p99_us": 99.25,
    "nccl_allreduce_p50_ms": 1.5, "nccl_allreduce_p99_ms": 3.0,
    "dataloader_wait_p50_ms": 2.0, "last_update_ms": 0,
    "collector_up": True, "generation": 77, "age_ms": 12,
    "gpus": [{"gpu_id": 0, "total_bytes": 1000000000, "used_bytes": 123456789, "processes": 1}],
    "processes": [{"pid": 4242, "ppid": 1, "comm": "good\u001b[2Jname", "cuda_launch_count": 5}],
    "nccl": [], "alerts": [], "telemetry": {"publishes": 31337},
}


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


def odd():
    yield from junk()
    yield json.dumps({"gpus": 5, "gpu_utilization": [], "processes": {"pid": 1},
                      "nccl": [1, "a", None], "alerts": [None, 3, {"labels": 5}],
                      "telemetry": [], "cuda_latency_p99_us": "fast"})
    yield json.dumps({"gpu_utilization": [{"key": k, "current_bytes": v} for k, v in
                                          [("1:", 1), (":1", 1), ("-1:0", 1), ("1:0x", 1),
                                           ("99999999999:0", 1), ("1:0", -5), ("1:0", 1e300),
                                           ("1:0", 1.5)]]})
    yield json.dumps({"gpu_utilization": [], "gpus": [{"gpu_id": i, "total_bytes": 1, "used_bytes": 2}
                               for i in range(20000)],
                      "processes": [{"pid": i, "comm": "\u00e9\u4e2d\x07" * 50} for i in range(10000)]})
    yield "{\"gpu_utilization\": [], \"cuda_latency_p99_us\": 1e999, \"age_ms\": -1e999}"
    yield ("{\"gpu_utilization\": [], \"processes\": [{\"pid\": 1, "
           "\"comm\": \"\\u0000\\u001b]0;pwned\\u0007\"}], \"alerts\": [{\"alertname\": "
           "\"\\u001b[31mX\", \"firing\": \"yes\", \"summary\": 5}]}")


async def handler(ws, path=None):
    try:
        while True:
            for m in (odd() if MODE == "odd" else junk()):
                await ws.send(m)
                await asyncio.sleep(0.01)
            await ws.send(json.dumps(GOOD))
            await asyncio.sleep(0.4)   # the good one stays the newest for a while
    except websockets.ConnectionClosed:
        pass


async def main(port):
    async with websockets.serve(handler, "127.0.0.1", port, max_size=None,
                                compression=None):
        print("ready", flush=True)
        await asyncio.Future()


if __name__ == "__main__":
    MODE = sys.argv[2] if len(sys.argv) > 2 else "junk"
    asyncio.run(main(int(sys.argv[1])))
