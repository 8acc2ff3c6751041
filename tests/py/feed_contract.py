#!/usr/bin/python3
# SPDX-License-Identifier: BSD-2-Clause
#
# The feed contract, for tests/exporter/check_feed_contract.c: snapshots of
# zernel-exporter's WebSocket feed must validate against docs/feed.schema.json
# (python3-jsonschema), and the recorded ones in tests/fixtures/ must have
# the key set of what the live exporter sends now.
#
#   feed_contract.py validate SCHEMA FILE...
#       every file is one snapshot that validates
#   feed_contract.py capture SCHEMA WS_PORT SCENARIO FIXTURE [--record]
#       reads the feed until the scenario shows (an OOM alert firing, a slow
#       all_reduce, ...), validates that snapshot; --record writes it to
#       FIXTURE byte for byte, otherwise FIXTURE must have the same keys
# Exit status 0 when every check holds; otherwise the first failure is printed.
import asyncio
import json
import sys
import time

import jsonschema
import websockets


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def validator(path):
    with open(path) as f:
        schema = json.load(f)
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def check(v, snap, what):
    errors = sorted(v.iter_errors(snap), key=lambda e: list(e.absolute_path))
    if errors:
        e = errors[0]
        fail("%s: %s at %s (%d errors)" % (what, e.message,
             "/".join(str(p) for p in e.absolute_path) or "the root", len(errors)))


def keys(o, path=""):
    """Every key path, array items merged: the shape of a snapshot."""
    out = set()
    if isinstance(o, dict):
        for k, v in o.items():
            out.add(path + "." + k)
            out |= keys(v, path + "." + k)
    elif isinstance(o, list):
        for v in o:
            out |= keys(v, path + "[]")
    return out


def alert(s, name, state):
    return any(a["alertname"] == name and a["state"] == state for a in s["alerts"])


# When a snapshot shows the scenario: what each fixture is a picture of.
SHOWN = {
    "steady": lambda s: s["collector_up"] and s["telemetry"]["publishes"] >= 3,
    "oom": lambda s: s["collector_up"] and alert(s, "GpuOomWarning", "firing"),
    "straggler": lambda s: s["collector_up"] and s["nccl_allreduce_p99_ms"] > 1,
    "dataloader-stall": lambda s: s["collector_up"] and s["dataloader_wait_p99_ms"] > 100,
    "down": lambda s: not s["collector_up"] and alert(s, "CollectorDown", "pending"),
}


async def capture(port, scenario, timeout):
    deadline = time.monotonic() + timeout
    async with websockets.connect("ws://127.0.0.1:%d/" % port, max_size=None) as ws:
        while time.monotonic() < deadline:
            msg = await asyncio.wait_for(ws.recv(), 10)
            if SHOWN[scenario](json.loads(msg)):
                return msg
    fail("%s: not shown within %d s" % (scenario, timeout))


def main():
    if len(sys.argv) >= 3 and sys.argv[1] == "validate":
        v = validator(sys.argv[2])
        for path in sys.argv[3:]:
            with open(path) as f:
                check(v, json.load(f), path)
        print("%d files valid" % len(sys.argv[3:]))
        return
    if len(sys.argv) < 6 or sys.argv[1] != "capture":
        fail("usage: feed_contract.py validate SCHEMA FILE... | "
             "capture SCHEMA WS_PORT SCENARIO FIXTURE [--record]")
    v = validator(sys.argv[2])
    scenario, fixture = sys.argv[4], sys.argv[5]
    msg = asyncio.run(capture(int(sys.argv[3]), scenario, 60))
    snap = json.loads(msg)
    check(v, snap, "live %s snapshot" % scenario)
    if "--record" in sys.argv[6:]:
        with open(fixture, "w") as f:
            f.write(msg)
        print("recorded %s (%d bytes)" % (fixture, len(msg)))
        return
    with open(fixture) as f:
        recorded = json.load(f)
    live, old = keys(snap), keys(recorded)
    if live != old:
        fail("%s: keys differ from the live exporter's (make feed-contract records "
             "them again): only live %s, only recorded %s"
             % (fixture, sorted(live - old)[:8], sorted(old - live)[:8]))
    print("%s: live snapshot valid, %d keys as recorded" % (scenario, len(live)))


main()
