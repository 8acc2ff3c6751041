#!/usr/bin/python3
# SPDX-License-Identifier: BSD-2-Clause
#
# A real WebSocket client (python3-websockets) against zernel-exporter's feed.
# Connects with no subprotocol (as `websocat ws://host:port` does), checks
# the cadence and that every frame keeps the feed contract
# (docs/feed.schema.json, python3-jsonschema), then checks that one snapshot
# agrees with a /metrics scrape of the same publish.  Exit status 0 when every check holds;
# otherwise the first failed check is printed.
#
# usage: ws_feed_check.py WS_PORT METRICS_PORT INTERVAL_MS FRAMES [SUBPROTOCOL]
import asyncio
import json
import os
import re
import sys
import time
import urllib.request

import jsonschema
import websockets

SCHEMA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs",
                      "feed.schema.json")
SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def scrape(port):
    with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=10) as r:
        text = r.read().decode()
    series = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = SAMPLE.match(line)
        if not m:
            fail("unparsable metrics line: " + line)
        labels = tuple(sorted(LABEL.findall(m.group(3) or "")))
        series[(m.group(1), labels)] = float(m.group(4))
    return series


def get(series, name, **labels):
    return series.get((name, tuple(sorted(labels.items()))))


async def main():
    ws_port, metrics_port, interval_ms, frames = (int(a) for a in sys.argv[1:5])
    sub = [sys.argv[5]] if len(sys.argv) > 5 else None
    with open(SCHEMA) as f:
        contract = jsonschema.Draft202012Validator(json.load(f))
    async with websockets.connect("ws://127.0.0.1:%d/" % ws_port, subprotocols=sub,
                                  max_size=None, open_timeout=5) as ws:
        if sub and ws.subprotocol != sub[0]:
            fail("asked for subprotocol %s, got %r" % (sub[0], ws.subprotocol))
        if not sub and ws.subprotocol is not None:
            fail("no subprotocol asked, got %r" % ws.subprotocol)
        # The first snapshot comes at once; the cadence is measured after it.
        first = json.loads(await asyncio.wait_for(ws.recv(), 5))
        stamps = []
        for _ in range(frames):
            msg = await asyncio.wait_for(ws.recv(), 5 + 3 * interval_ms / 1000)
            stamps.append(time.monotonic())
            snap = json.loads(msg)
            for e in contract.iter_errors(snap):
                fail("the frame breaks the feed contract: %s at %s"
                     % (e.message, "/".join(str(p) for p in e.absolute_path)))
            if not snap["collector_up"]:
                fail("collector_up is false: " + snap["stale_reason"])
            for e in snap["gpu_utilization"]:
                if not re.fullmatch(r"\d+:\d+", e["key"]) or \
                        e["key"] != "%d:%d" % (e["pid"], e["gpu_id"]):
                    fail("bad gpu_utilization entry %r" % e)
        gaps = [b - a for a, b in zip(stamps, stamps[1:])]
        mean = sum(gaps) / len(gaps)
        want = interval_ms / 1000
        # One timer per interval.  A client stamps a frame when it has read
        # it, so on a loaded machine one late read shortens the next gap:
        # over the whole span the count of frames is what must hold, to
        # within one frame, and no gap may swallow several intervals.  A
        # frame per publish instead of per interval, or bursts, still fail.
        span = stamps[-1] - stamps[0]
        if abs(span - len(gaps) * want) > want + 0.1 * len(gaps) * want \
                or max(gaps) > 3 * want:
            fail("cadence: %d frames over %.3f s (mean gap %.3f s, max %.3f s), "
                 "configured %.3f s" % (len(stamps), span, mean, max(gaps), want))
        print("cadence ok: %d frames, mean gap %.3f s (configured %.3f s), first frame %d bytes"
              % (len(stamps), mean, want, len(json.dumps(first))))

        # Consistency: a snapshot and a scrape of the same publish agree.
        # The snapshot may have arrived before the scrape, even a frame or
        # two before it (a scrape during a render takes the publish before,
        # docs/design.md, "Rendered once per publish"): keep the recent ones.
        recent = []
        snap = None
        for attempt in range(20):
            series = scrape(metrics_port)
            ts = get(series, "zernel_collector_last_publish_timestamp_seconds")
            if ts is None:
                fail("no zernel_collector_last_publish_timestamp_seconds in /metrics")
            want_ms = int(round(ts * 1000 - 0.5))  # floor, as the feed does
            snap = next((f for f in recent if f["last_update_ms"] == want_ms), None)
            deadline = time.monotonic() + 5
            while snap is None and time.monotonic() < deadline:
                frame = json.loads(await asyncio.wait_for(ws.recv(), 5))
                recent = (recent + [frame])[-8:]
                if frame["last_update_ms"] == want_ms:
                    snap = frame
                if frame["last_update_ms"] >= want_ms:
                    break
            if snap is not None:
                break
        if not snap:
            fail("never saw a snapshot of the publish that /metrics showed")
        if get(series, "zernel_segment_generation") != float(snap["generation"]):
            fail("generation differs")
        checked = 0
        for e in snap["gpu_utilization"]:
            pid, gpu = e["key"].split(":")
            used = get(series, "zernel_gpu_memory_used_bytes", pid=pid, gpu_id=gpu)
            peak = get(series, "zernel_gpu_memory_peak_bytes", pid=pid, gpu_id=gpu)
            if used != float(e["current_bytes"]) or peak != float(e["peak_bytes"]):
                fail("gpu %s: feed %d/%d, metrics %r/%r" % (e["key"], e["current_bytes"],
                                                           e["peak_bytes"], used, peak))
            checked += 1
        for p in snap["processes"]:
            pid = str(p["pid"])
            count = get(series, "zernel_cuda_launch_latency_seconds_count", pid=pid)
            if p["cuda_launch_count"] == 0:
                if count is not None:
                    fail("pid %s: no launches in the feed, %r in metrics" % (pid, count))
                continue
            if count != float(p["cuda_launch_count"]):
                fail("pid %s: launch count feed %d, metrics %r" % (pid, p["cuda_launch_count"], count))
            for q, key in (("0.5", "cuda_launch_p50_us"), ("0.99", "cuda_launch_p99_us")):
                m = get(series, "zernel_cuda_launch_latency_seconds", pid=pid, quantile=q)
                if m is None or abs(m * 1e6 - p[key]) > 1e-6 * max(1.0, p[key]):
                    fail("pid %s: %s feed %r, metrics %r s" % (pid, key, p[key], m))
            checked += 1
        for n in snap["nccl"]:
            calls = get(series, "zernel_nccl_calls_total", op=n["op"])
            if calls != float(n["calls"]):
                fail("nccl %s: calls feed %d, metrics %r" % (n["op"], n["calls"], calls))
            if n["op"] == "all_reduce" and n["calls"]:
                m = get(series, "zernel_nccl_collective_duration_seconds", op="all_reduce",
                        quantile="0.5")
                if abs(m * 1e3 - snap["nccl_allreduce_p50_ms"]) > 1e-6:
                    fail("all_reduce p50: feed %r ms, metrics %r s" % (snap["nccl_allreduce_p50_ms"], m))
            checked += 1
        if checked < 3:
            fail("too little to compare (%d items)" % checked)
        print("consistency ok: %d items agree with /metrics" % checked)


asyncio.run(main())
