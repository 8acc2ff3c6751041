#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Zernel against the GPU itself: `make gpu-check` on a node with an NVIDIA
GPU and PyTorch built for CUDA, run as root (the collector loads BPF).

A short training job runs three ways, one process each: PyTorch's default
caching allocator, expandable_segments:True (cuMemCreate/cuMemMap), and the
cudaMallocAsync backend.  While each job holds its memory, Zernel's figures
for its pid (Prometheus text from zernel-exporter) are compared with what
nobody here wrote:

  reserved    zernel_gpu_memory_used_bytes summed over the pid's GPUs
              vs torch.cuda.memory_reserved(), what the allocator holds
              from the driver; with the cudaMallocAsync backend vs
              torch.cuda.memory_allocated(), since the driver's pool, not
              PyTorch, keeps the freed blocks and Zernel sees the
              cudaMallocAsync/cudaFreeAsync calls
  smi         the same vs nvidia-smi's per-process used memory, which also
              holds the CUDA context: Zernel must be below it, by less than
              the context allowance
  launches    zernel_cuda_launch_latency_seconds_count of the pid vs the
              launch API calls torch.profiler recorded (cudaLaunchKernel,
              cuLaunchKernel and their Ex forms), the whole job profiled

It prints one table and exits 1 when a figure is beyond its tolerance, 77
(and says it was not run) where there is no GPU, no CUDA PyTorch or no root.
"""
import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.request

NOT_RUN = 77

# Tolerances, stated once.
RESERVED_REL = 0.02          # Zernel vs memory_reserved: 2 % ...
RESERVED_ABS = 2 << 20       # ... or 2 MiB, whichever is larger
CONTEXT_MAX = 1536 << 20     # nvidia-smi minus Zernel: the context, at most 1.5 GiB
LAUNCH_REL = 0.02            # Zernel vs profiler launches: 2 % ...
LAUNCH_ABS = 20              # ... or 20 launches (calls outside the profiled region)

MODES = [
    ("caching", {}),
    ("expandable", {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"}),
    ("cudaMallocAsync", {"PYTORCH_CUDA_ALLOC_CONF": "backend:cudaMallocAsync"}),
]

# The job: a small convolutional net trained for a few steps, all of it
# profiled; then the figures, then it holds its memory until stdin closes.
JOB = r"""
import json, sys, torch
from torch.profiler import profile, ProfilerActivity
dev = torch.device("cuda", 0)
with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 64, 3, padding=1), torch.nn.ReLU(),
        torch.nn.Conv2d(64, 64, 3, padding=1), torch.nn.ReLU(),
        torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(64, 10)).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for step in range(50):
        x = torch.randn(64, 3, 64, 64, device=dev)
        y = torch.randint(0, 10, (64,), device=dev)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    torch.cuda.synchronize()
launch_names = {"cudaLaunchKernel", "cuLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernelEx"}
launches = sum(e.count for e in prof.key_averages() if e.key in launch_names)
print(json.dumps({"pid": __import__("os").getpid(),
                  "reserved": torch.cuda.memory_reserved(dev),
                  "allocated": torch.cuda.memory_allocated(dev),
                  "launches": launches}), flush=True)
sys.stdin.read()
"""


def refuse(why):
    print(f"gpu-check: NOT RUN: {why}", file=sys.stderr)
    sys.exit(NOT_RUN)


def preflight(python):
    if os.geteuid() != 0:
        refuse("needs root (the collector loads BPF programs)")
    if not shutil.which("nvidia-smi"):
        refuse("no nvidia-smi: this node has no NVIDIA driver")
    r = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True)
    if r.returncode != 0 or "GPU" not in r.stdout:
        refuse("nvidia-smi lists no GPU: " + (r.stderr.strip() or r.stdout.strip()))
    r = subprocess.run([python, "-c", "import torch; print(torch.cuda.is_available())"],
                       capture_output=True, text=True)
    if r.returncode != 0 or r.stdout.strip() != "True":
        refuse(f"{python} has no PyTorch with CUDA: {(r.stderr or r.stdout).strip()[-300:]}")


def scrape(port):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as resp:
        return resp.read().decode()


def series(text, family, pid):
    """Sum of family's samples whose pid label is pid."""
    total, found = 0.0, False
    pat = re.compile(r'^' + re.escape(family) + r'\{([^}]*)\} (\S+)$')
    for line in text.splitlines():
        m = pat.match(line)
        if m and f'pid="{pid}"' in m.group(1):
            total += float(m.group(2))
            found = True
    return total if found else None


def smi_used(pid):
    r = subprocess.run(["nvidia-smi", "--query-compute-apps=pid,used_memory",
                        "--format=csv,noheader,nounits"], capture_output=True, text=True)
    for line in r.stdout.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) == 2 and parts[0] == str(pid) and parts[1].isdigit():
            return int(parts[1]) << 20
    return None


def run_mode(python, name, env_extra, port):
    env = dict(os.environ, **env_extra)
    job = subprocess.Popen([python, "-c", JOB], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                           env=env, text=True)
    try:
        line = job.stdout.readline()
        if not line:
            return {"mode": name, "error": f"the job ended: exit {job.wait()}"}
        got = json.loads(line)
        time.sleep(1.5)          # two publishes and a scrape
        text = scrape(port)
        return {
            "mode": name,
            "pid": got["pid"],
            "torch_reserved": got["allocated"] if name == "cudaMallocAsync" else got["reserved"],
            "torch_launches": got["launches"],
            "zernel_used": series(text, "zernel_gpu_memory_used_bytes", got["pid"]),
            "zernel_launches": series(text, "zernel_cuda_launch_latency_seconds_count",
                                      got["pid"]),
            "smi_used": smi_used(got["pid"]),
        }
    finally:
        job.stdin.close()
        job.wait(timeout=30)


def judge(r):
    """The row's verdicts: (name, ok, detail)."""
    out = []
    zu, tr = r.get("zernel_used"), r.get("torch_reserved")
    if zu is None:
        out.append(("reserved", False, "no zernel_gpu_memory_used_bytes for the pid"))
    else:
        tol = max(RESERVED_ABS, RESERVED_REL * tr)
        out.append(("reserved", abs(zu - tr) <= tol, f"{zu - tr:+.0f} B (tol {tol:.0f})"))
    su = r.get("smi_used")
    if su is None or zu is None:
        out.append(("smi", False, "no nvidia-smi row for the pid"))
    else:
        out.append(("smi", 0 <= su - zu <= CONTEXT_MAX, f"context {(su - zu) / 2**20:.0f} MiB"))
    zl, tl = r.get("zernel_launches"), r.get("torch_launches")
    if zl is None:
        out.append(("launches", False, "no launch count for the pid"))
    else:
        tol = max(LAUNCH_ABS, LAUNCH_REL * tl)
        out.append(("launches", abs(zl - tl) <= tol, f"{zl - tl:+.0f} (tol {tol:.0f})"))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build", help="folder with zernel-collector/-exporter")
    ap.add_argument("--python", default=sys.executable, help="Python with CUDA PyTorch")
    ap.add_argument("--port", type=int, default=19391)
    args = ap.parse_args()
    preflight(args.python)

    shm = f"/zernel-gpucheck-{os.getpid()}"
    col = subprocess.Popen([os.path.join(args.build, "zernel-collector"), "--shm", shm,
                            "--publish-interval", "200"])
    exp = None
    rows = []
    try:
        time.sleep(3)
        exp = subprocess.Popen([os.path.join(args.build, "zernel-exporter"), "--shm", shm,
                                "--metrics-listen", f"127.0.0.1:{args.port}",
                                "--ws-listen", f"127.0.0.1:{args.port + 1}"])
        time.sleep(1)
        for name, env in MODES:
            rows.append(run_mode(args.python, name, env, args.port))
    finally:
        for p in (exp, col):
            if p and p.poll() is None:
                p.send_signal(signal.SIGTERM)
                p.wait(timeout=10)

    failed = 0
    print(f"{'mode':<16} {'pid':>8} {'torch reserved':>15} {'zernel used':>12} "
          f"{'nvidia-smi':>11} {'prof launches':>14} {'zernel launches':>16}  verdict")
    for r in rows:
        if "error" in r:
            print(f"{r['mode']:<16} {r['error']}")
            failed += 1
            continue
        verdicts = judge(r)
        failed += sum(1 for _, ok, _ in verdicts if not ok)
        fmt = lambda v: "-" if v is None else f"{v:.0f}"
        print(f"{r['mode']:<16} {r['pid']:>8} {fmt(r['torch_reserved']):>15} "
              f"{fmt(r['zernel_used']):>12} {fmt(r['smi_used']):>11} "
              f"{fmt(r['torch_launches']):>14} {fmt(r['zernel_launches']):>16}  " +
              "; ".join(f"{n} {'ok' if ok else 'FAIL'} ({d})" for n, ok, d in verdicts))
    print("gpu-check: " + ("all figures within tolerance" if not failed
                           else f"{failed} figures beyond tolerance"))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
