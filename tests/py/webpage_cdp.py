#!/usr/bin/python3
# SPDX-License-Identifier: BSD-2-Clause
#
# Drives headless Chromium over the DevTools protocol for
# tests/exporter/check_webpage.c: loads the live page, records console errors
# and exceptions, waits until values from the feed appear and then change,
# saves screenshots, and prints one JSON object with what it saw.  The C test
# makes the assertions.  With --keys it instead renders recorded snapshots
# (tests/fixtures) through a proxy that notes every key the page reads, and
# says which of them the feed's schema lacks.
#
#   webpage_cdp.py --url URL --screenshot PNG [--dark-screenshot PNG]
#                  [--chromium PATH] [--timeout S] [--updates N]
#   webpage_cdp.py --url URL --keys SCHEMA --fixture JSON...
import argparse
import asyncio
import base64
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request

import websockets

STATE_JS = r"""
JSON.stringify({
  conn: document.getElementById('conn').textContent,
  collector: document.getElementById('collector').textContent,
  snapshots: Number(document.getElementById('snapshots').textContent),
  age: document.getElementById('age').textContent,
  cuda: document.getElementById('cuda-now').textContent,
  gpus: Array.from(document.querySelectorAll('#gpus .gpu')).map(g => ({
    id: Number(g.dataset.gpuId), used: Number(g.dataset.usedBytes),
    total: Number(g.dataset.totalBytes), oom: g.classList.contains('oom'),
    text: g.textContent })),
  nccl: Array.from(document.querySelectorAll('#nccl tbody tr')).map(r => r.dataset.op || ''),
  procs: document.querySelectorAll('#procs tbody tr').length,
  alerts: document.getElementById('alerts').textContent,
  explain: (document.getElementById('explain') || {}).textContent || '',
  history: (window.zernel && window.zernel.history.length) || 0,
  dark: matchMedia('(prefers-color-scheme: dark)').matches,
  bg: getComputedStyle(document.body).backgroundColor
})
"""


# Gives each snapshot to the page through proxies that note the keys read, as paths
# ("processes[].comm"); array methods and indexes are not keys.
KEYS_JS = r"""
(function (snaps) {
  const reads = new Set();
  function wrap(v, path) {
    if (v === null || typeof v !== "object") return v;
    return new Proxy(v, {
      get(t, k, r) {
        if (typeof k === "symbol") return Reflect.get(t, k, r);
        if (Array.isArray(t)) return /^[0-9]+$/.test(k) ? wrap(t[k], path + "[]") : Reflect.get(t, k, r);
        const p = path ? path + "." + k : k;
        reads.add(p);
        return wrap(t[k], p);
      }
    });
  }
  for (const s of snaps) window.zernel.take(wrap(s, ""));
  return JSON.stringify(Array.from(reads).sort());
})
"""


def schema_has(schema, path):
    """Whether a key path ("a[].b.c") is one the schema declares."""
    node = schema
    for part in path.replace("[]", ".[]").split("."):
        if part == "[]":
            node = node.get("items", {})
        else:
            node = node.get("properties", {}).get(part)
            if node is None:
                return False
    return True


class Cdp:
    def __init__(self, ws):
        self.ws = ws
        self.next_id = 0
        self.events = []

    async def call(self, method, **params):
        self.next_id += 1
        my_id = self.next_id
        await self.ws.send(json.dumps({"id": my_id, "method": method, "params": params}))
        while True:
            msg = json.loads(await self.ws.recv())
            if msg.get("id") == my_id:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result", {})
            if "method" in msg:
                self.events.append(msg)

    async def state(self):
        r = await self.call("Runtime.evaluate", expression=STATE_JS, returnByValue=True)
        if "exceptionDetails" in r or "value" not in r.get("result", {}):
            return None   # the page is not there yet (navigation in progress)
        return json.loads(r["result"]["value"])

    async def screenshot(self, path):
        r = await self.call("Page.captureScreenshot", format="png")
        with open(path, "wb") as f:
            f.write(base64.b64decode(r["data"]))


def devtools_port(profile, proc, deadline):
    path = os.path.join(profile, "DevToolsActivePort")
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"chromium exited with {proc.returncode}")
        try:
            with open(path) as f:
                return int(f.readline())
        except (OSError, ValueError):
            time.sleep(0.1)
    raise RuntimeError("chromium did not open its DevTools port")


def page_ws_url(port, deadline):
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=2) as r:
                for t in json.load(r):
                    if t.get("type") == "page":
                        return t["webSocketDebuggerUrl"]
        except OSError:
            pass
        time.sleep(0.1)
    raise RuntimeError("no page target in chromium")


def problems(events):
    out = []
    for e in events:
        m, p = e["method"], e.get("params", {})
        if m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
            out.append("console: " + " ".join(str(a.get("value", a.get("description", "")))
                                             for a in p.get("args", [])))
        elif m == "Runtime.exceptionThrown":
            d = p.get("exceptionDetails", {})
            out.append("exception: " + str(d.get("exception", {}).get("description", d.get("text"))))
        elif m == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
            out.append("log: " + p["entry"].get("text", "") + " " + p["entry"].get("url", ""))
    return out


async def keys(args, port, deadline):
    with open(args.keys) as f:
        schema = json.load(f)
    snaps = []
    for path in args.fixture:
        with open(path) as f:
            snaps.append(json.load(f))
    async with websockets.connect(page_ws_url(port, deadline), max_size=None) as ws:
        cdp = Cdp(ws)
        await cdp.call("Runtime.enable")
        await cdp.call("Page.navigate", url=args.url)
        while time.monotonic() < deadline:
            r = await cdp.call("Runtime.evaluate", returnByValue=True,
                               expression="!!(window.zernel && window.zernel.take)")
            if r.get("result", {}).get("value"):
                break
            await asyncio.sleep(0.1)
        r = await cdp.call("Runtime.evaluate", returnByValue=True,
                           expression=KEYS_JS + "(" + json.dumps(snaps) + ")")
        if "exceptionDetails" in r:
            return {"ok": False, "error": str(r["exceptionDetails"])}
        reads = json.loads(r["result"]["value"])
    missing = [p for p in reads if not schema_has(schema, p)]
    return {"ok": bool(reads) and not missing, "reads": reads, "missing": missing}


async def drive(args, port, deadline):
    result = {"ok": False}
    async with websockets.connect(page_ws_url(port, deadline), max_size=None) as ws:
        cdp = Cdp(ws)
        for m in ("Runtime.enable", "Log.enable", "Page.enable"):
            await cdp.call(m)
        # A laptop screen.
        await cdp.call("Emulation.setDeviceMetricsOverride", width=1366, height=900,
                       deviceScaleFactor=1, mobile=False)
        await cdp.call("Emulation.setEmulatedMedia", features=[
            {"name": "prefers-color-scheme", "value": "light"}])
        await cdp.call("Page.navigate", url=args.url)

        first = None
        while time.monotonic() < deadline:
            s = await cdp.state()
            if s and s["snapshots"] >= 1 and s["gpus"]:
                first = s
                break
            await asyncio.sleep(0.2)
        result["first"] = first
        later = None
        while first and time.monotonic() < deadline:
            await asyncio.sleep(0.3)
            s = await cdp.state()
            if not s:
                continue
            changed = [g["used"] for g in s["gpus"]] != [g["used"] for g in first["gpus"]] \
                or s["cuda"] != first["cuda"]
            if s["snapshots"] >= first["snapshots"] + args.updates and changed:
                later = s
                break
        result["later"] = later
        await asyncio.sleep(0.5)   # let the charts draw a few points more
        await cdp.screenshot(args.screenshot)
        if args.dark_screenshot:
            await cdp.call("Emulation.setEmulatedMedia", features=[
                {"name": "prefers-color-scheme", "value": "dark"}])
            await asyncio.sleep(0.3)
            result["dark"] = await cdp.state()
            await cdp.screenshot(args.dark_screenshot)
        await cdp.call("Runtime.evaluate", expression="1")   # flush pending events
        result["problems"] = problems(cdp.events)
        result["ok"] = first is not None and later is not None
    return result


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True)
    ap.add_argument("--screenshot")
    ap.add_argument("--keys", metavar="SCHEMA")
    ap.add_argument("--fixture", action="append", default=[])
    ap.add_argument("--dark-screenshot")
    ap.add_argument("--chromium", default=shutil.which("chromium") or "/usr/bin/chromium")
    ap.add_argument("--timeout", type=float, default=40.0)
    ap.add_argument("--updates", type=int, default=2)
    args = ap.parse_args()

    profile = tempfile.mkdtemp(prefix="zernel-chromium-")
    cmd = [args.chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
           "--no-first-run", "--disable-background-networking", "--disable-component-update",
           "--disable-sync", "--disable-dev-shm-usage", "--hide-scrollbars",
           f"--user-data-dir={profile}", "--remote-debugging-port=0",
           "--remote-debugging-address=127.0.0.1", "about:blank"]
    # Chromium and its helpers stay in the caller's process group, which the
    # test runner kills when a test ends: nothing outlives a failed test.
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + args.timeout
    try:
        port = devtools_port(profile, proc, deadline)
        result = asyncio.run(keys(args, port, deadline) if args.keys else
                             drive(args, port, deadline))
    except Exception as e:   # reported to the C test, which fails with it
        result = {"ok": False, "error": f"{type(e).__name__}: {e}"}
    finally:
        proc.terminate()    # the browser takes its helpers down with it
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        shutil.rmtree(profile, ignore_errors=True)
    print(json.dumps(result))
    return 0 if result.get("ok") else 1


if __name__ == "__main__":
    sys.exit(main())
