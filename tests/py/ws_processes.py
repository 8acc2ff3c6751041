#!/usr/bin/python3
# SPDX-License-Identifier: BSD-2-Clause
#
# A real WebSocket client (python3-websockets) that reads zernel-exporter's
# feed until a snapshot lists at least N processes, then prints that raw
# frame on the first line and each process object on a line of its own as
# compact JSON with sorted keys, for the C tests to search.
#
# usage: ws_processes.py WS_PORT N [TIMEOUT_S]
import asyncio
import json
import sys
import time

import websockets


async def main():
    port, want = int(sys.argv[1]), int(sys.argv[2])
    timeout = float(sys.argv[3]) if len(sys.argv) > 3 else 20
    deadline = time.monotonic() + timeout
    async with websockets.connect("ws://127.0.0.1:%d/" % port, max_size=None) as ws:
        while time.monotonic() < deadline:
            raw = await asyncio.wait_for(ws.recv(), 10)
            frame = json.loads(raw)
            procs = frame.get("processes") or []
            if len(procs) >= want:
                print(raw.replace("\n", " "))
                for p in procs:
                    print(json.dumps(p, sort_keys=True, separators=(",", ":")))
                return 0
    print("FAIL: no snapshot with %d processes within %g s" % (want, timeout))
    return 1


sys.exit(asyncio.run(main()))
