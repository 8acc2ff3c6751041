#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Zernel against the GPU itself: `make gpu-check` on a node with an NVIDIA
GPU and PyTorch built for CUDA, run as root (the collector loads BPF).

Each job is one process that does something it can measure itself, with
nobody's code but PyTorch's, CUDA's and NCCL's; Zernel's figures for it
(Prometheus text from zernel-exporter) are compared with that:

  memory      a job in phases (MEMORY_JOB), three ways: PyTorch's default
              caching allocator, expandable_segments:True (cuMemCreate/
              cuMemMap), and the cudaMallocAsync backend.  What Zernel
              counts a phase gained, zernel_gpu_memory_used_bytes of the pid:
                elementwise  equal to what PyTorch's allocator gained
                          (memory_reserved(): with cudaMallocAsync, what
                          the driver's pool holds, freed blocks included,
                          which is what Zernel follows), as nothing else
                          allocates
                cublas, cudnn, train  at least that and at most what the
                          driver took from the device (mem_get_info): the
                          libraries allocate for themselves (cuBLAS a
                          workspace per handle), which PyTorch does not
                          count; the driver also loads kernels
                driver    the total below the driver's figure for the
                          process (nvidia-smi), by less than the context
                          allowance
                launches  zernel_cuda_launch_latency_seconds_count gained
                          over training under torch.profiler vs the launch
                          API calls the profiler recorded
  sync        torch.cuda._sleep kernels, each waited for with
              torch.cuda.synchronize(), timed by the job: the driver spins
              while it has CPUs to spare, so the wait never leaves the CPU.
                gpu state zernel_thread_state_seconds_total{state="gpu"}
                          gained vs the time the job spent in synchronize()
                sync sum  zernel_cuda_sync_latency_seconds_sum gained, same
  verdict     a job held up by its GPU and one held up by its DataLoader
              (VERDICT_JOBS): /api/stalls, what `zernel explain` shows, must
              call them GPU-bound and data-bound, from the scheduler's
              thread states (no Python frames needed)
  nccl        a one-rank NCCL process group doing all_reduce.
                calls     zernel_nccl_calls_total{op="all_reduce"} gained vs
                          the calls made; bytes likewise
                comm      a zernel_nccl_comm_info row for the pid, world 1
                          (run with Zernel's NCCL profiler plugin loaded: the
                          GPU spans it reported are printed beside)

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
CONTEXT_MAX = 1536 << 20     # nvidia-smi minus Zernel: context and kernels, at most 1.5 GiB
LAUNCH_REL = 0.02            # Zernel vs profiler launches: 2 % ...
LAUNCH_ABS = 20              # ... or 20 launches (calls outside the profiled region)
SYNC_REL = 0.05              # gpu state and sync sum vs the job's timing: 5 % ...
SYNC_ABS = 0.02              # ... or 20 ms
SETTLE_S = 1.5               # two publishes and a scrape

MEMORY_MODES = [
    ("caching", {}),
    ("expandable", {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"}),
    ("cudaMallocAsync", {"PYTORCH_CUDA_ALLOC_CONF": "backend:cudaMallocAsync"}),
]

# Every job prints {"pid": ...} once it is set up, then answers each line
# of its stdin with one JSON line: "run" does the measured work, "poke"
# nothing (it only wakes the thread, so that the scheduler closes the
# stretch it had on the CPU), and it ends when stdin closes.
JOB_LOOP = r"""
print(json.dumps({"pid": os.getpid()}), flush=True)
for line in sys.stdin:
    print(json.dumps(run() if line.strip() == "run" else {}), flush=True)
"""

# The job's memory in phases, each answering with what PyTorch's allocator
# holds and what the driver says the device has free (mem_get_info):
#   context      a first tensor: the CUDA context and the allocator's
#                first segment
#   elementwise  256 MiB of tensors and elementwise kernels alone: every
#                byte goes through PyTorch's allocator
#   cublas       matrix products: cuBLAS may allocate for itself
#   cudnn        convolutions: so may cuDNN
#   train        a small convolutional net trained for 50 steps
#   profile      20 steps more under torch.profiler, counting launch calls
# Tensors are kept, so that what a phase took stays held.
MEMORY_JOB = r"""
import json, os, sys, torch
from torch.profiler import profile, ProfilerActivity
dev = torch.device("cuda", 0)
keep = []
model = opt = None
def train(steps):
    global model, opt
    if model is None:
        model = torch.nn.Sequential(
            torch.nn.Conv2d(3, 64, 3, padding=1), torch.nn.ReLU(),
            torch.nn.Conv2d(64, 64, 3, padding=1), torch.nn.ReLU(),
            torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(64, 10)).to(dev)
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for step in range(steps):
        x = torch.randn(64, 3, 64, 64, device=dev)
        y = torch.randint(0, 10, (64,), device=dev)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
def profiled():
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        train(20)
        torch.cuda.synchronize()
    names = {"cudaLaunchKernel", "cuLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernelEx"}
    return {"launches": sum(e.count for e in prof.key_averages() if e.key in names)}
def phase(what):
    out = {}
    if what == "context":
        keep.append(torch.zeros(1, device=dev))
    elif what == "elementwise":
        a = torch.full((32 << 20,), 1.0, device=dev)
        keep.extend((a, a * 2 + 1))
    elif what == "cublas":
        a = torch.randn(2048, 2048, device=dev)
        keep.extend((a, a @ a, (a @ a.T).sum()))
    elif what == "cudnn":
        c = torch.nn.Conv2d(3, 16, 3).to(dev)
        keep.extend((c, c(torch.randn(8, 3, 32, 32, device=dev)).sum()))
    elif what == "train":
        train(50)
    elif what == "profile":
        out = profiled()
    if what != "poke":
        torch.cuda.synchronize()
        free, total = torch.cuda.mem_get_info(dev)
        out.update(reserved=torch.cuda.memory_reserved(dev),
                   allocated=torch.cuda.memory_allocated(dev), device_used=total - free)
    return out
print(json.dumps({"pid": os.getpid()}), flush=True)
for line in sys.stdin:
    print(json.dumps(phase(line.strip())), flush=True)
"""
MEMORY_PHASES = ["context", "elementwise", "cublas", "cudnn", "train", "profile"]

# Ten waits of about 200 ms each for a kernel that spins on the GPU.
SYNC_JOB = r"""
import json, os, sys, time, torch
dev = torch.device("cuda", 0)
torch.ones(1, device=dev)
torch.cuda._sleep(1000)
torch.cuda.synchronize()
def run():
    spent = 0.0
    for _ in range(10):
        torch.cuda._sleep(400_000_000)
        t0 = time.perf_counter()
        torch.cuda.synchronize()
        spent += time.perf_counter() - t0
    return {"sync_s": spent, "syncs": 10}
""" + JOB_LOOP

# Two jobs whose bottleneck is known by construction, for the verdict of
# /api/stalls (`zernel explain`): matrix products waited for at each step,
# and a DataLoader whose two workers sleep 20 ms an item, 8 items a batch,
# in front of a tiny step.
VERDICT_JOBS = {
    "GPU-bound": r"""
import json, os, sys, time, torch
dev = torch.device("cuda", 0)
a = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
def run():
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < VERDICT_S:
        for _ in range(20):
            b = a @ a
        b.sum().item()
    return {}
""",
    "data-bound": r"""
import json, os, sys, time, torch
from torch.utils.data import DataLoader, Dataset
dev = torch.device("cuda", 0)
class Slow(Dataset):
    def __len__(self):
        return 1 << 20
    def __getitem__(self, i):
        time.sleep(0.02)
        return torch.ones(64)
w = torch.randn(64, 64, device=dev)
def run():
    t0 = time.perf_counter()
    for x in DataLoader(Slow(), batch_size=8, num_workers=2):
        (x.to(dev) @ w).sum().item()
        if time.perf_counter() - t0 >= VERDICT_S:
            break
    return {}
""",
}
VERDICT_S = 8

NCCL_CALLS = 200
NCCL_ELEMS = 1 << 20
NCCL_JOB = r"""
import json, os, sys, torch
import torch.distributed as dist
dev = torch.device("cuda", 0)
torch.cuda.set_device(dev)
dist.init_process_group("nccl", init_method="tcp://127.0.0.1:" + os.environ["GPU_CHECK_PORT"],
                        rank=0, world_size=1)
t = torch.ones(%d, device=dev)
dist.all_reduce(t)
torch.cuda.synchronize()
def run():
    for _ in range(%d):
        dist.all_reduce(t)
    torch.cuda.synchronize()
    return {"calls": %d, "bytes": %d * t.numel() * t.element_size()}
""" % (NCCL_ELEMS, NCCL_CALLS, NCCL_CALLS, NCCL_CALLS) + JOB_LOOP


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


def total(text, family, **labels):
    """Sum of family's samples that carry all of labels; None when none do."""
    found, acc = False, 0.0
    want = [f'{k}="{v}"' for k, v in labels.items()]
    pat = re.compile(r'^' + re.escape(family) + r'(?:\{([^}]*)\})? (\S+)$')
    for line in text.splitlines():
        m = pat.match(line)
        if m and all(w in (m.group(1) or "") for w in want):
            acc += float(m.group(2))
            found = True
    return acc if found else None


def gained(before, after, family, **labels):
    a = total(after, family, **labels)
    return None if a is None else a - (total(before, family, **labels) or 0.0)


def smi_used(pid):
    r = subprocess.run(["nvidia-smi", "--query-compute-apps=pid,used_memory",
                        "--format=csv,noheader,nounits"], capture_output=True, text=True)
    for line in r.stdout.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) == 2 and parts[0] == str(pid) and parts[1].isdigit():
            return int(parts[1]) << 20
    return None


class Job:
    """One job process, driven line by line."""

    def __init__(self, python, code, env):
        self.proc = subprocess.Popen([python, "-c", code], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, env=env, text=True)
        self.pid = self.ask(None)["pid"]

    def ask(self, what):
        if what is not None:
            self.proc.stdin.write(what + "\n")
            self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the job ended: exit {self.proc.wait()}")
        return json.loads(line)

    def settled(self, what):
        """The answer to what, once the scheduler closed the stretch the
        work ran in (a poke wakes the thread) and a publish took it."""
        got = self.ask(what)
        self.ask("poke")
        time.sleep(SETTLE_S)
        return got

    def close(self):
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def measured(python, code, env, port):
    """The job's own figures, and the exporter's text before and after its run."""
    job = Job(python, code, env)
    try:
        job.settled("poke")
        before = scrape(port)
        got = job.settled("run")
        return job.pid, got, before, scrape(port)
    finally:
        job.close()


def within(name, got, truth, rel, absolute, unit=""):
    if got is None:
        return (name, False, "no such series")
    tol = max(absolute, rel * truth)
    return (name, abs(got - truth) <= tol,
            f"zernel {got:.4g}{unit} vs {truth:.4g}{unit} (tol {tol:.3g})")


def smi_device_used():
    """Memory used on GPU 0, all processes and the driver's own (NVML, bytes)."""
    r = subprocess.run(["nvidia-smi", "-i", "0", "--query-gpu=memory.used",
                        "--format=csv,noheader,nounits"], capture_output=True, text=True)
    v = r.stdout.strip()
    return int(v) << 20 if r.returncode == 0 and v.isdigit() else None


def footprint(pid, idle):
    """What the driver says the job holds: its nvidia-smi row, or, where
    nvidia-smi lists no processes (in some virtual machines), the device's
    used memory less what it used before the job started."""
    own = smi_used(pid)
    if own is not None:
        return own, "nvidia-smi's row for the pid"
    now = smi_device_used()
    if now is None or idle is None:
        return None, "nvidia-smi gave neither a row for the pid nor the device's use"
    return now - idle, "nvidia-smi's device use less its use before the job"


def check_memory(python, env, port):
    """Zernel's figure after each phase against what PyTorch's allocator
    holds (the least it can be) and what the driver took from the device
    since the context was made (the most: it also holds the kernels the
    driver loads as they are first launched)."""
    idle = smi_device_used()
    job = Job(python, MEMORY_JOB, env)
    seen = {}
    try:
        for ph in MEMORY_PHASES:
            seen[ph] = dict(job.settled(ph), text=scrape(port))
            if ph == "train":
                held, how = footprint(job.pid, idle)
    finally:
        job.close()
    pid = job.pid
    key = "reserved"
    used = {ph: total(seen[ph]["text"], "zernel_gpu_memory_used_bytes", pid=pid)
            for ph in MEMORY_PHASES}
    if None in used.values():
        return pid, [("reserved", False, "no zernel_gpu_memory_used_bytes for the pid")], []
    out, notes = [], []
    base = seen["context"]
    for ph in MEMORY_PHASES[1:-1]:
        least = seen[ph][key] - base[key]
        most = seen[ph]["device_used"] - base["device_used"]
        got = used[ph] - used["context"]
        tol = max(RESERVED_ABS, RESERVED_REL * least)
        if ph == "elementwise":
            # Nothing but PyTorch's allocator: the two must agree.
            out.append(within(ph, got, least, RESERVED_REL, RESERVED_ABS, " B"))
        else:
            out.append((ph, least - tol <= got <= most + tol,
                        f"zernel {got} B within [{least} B allocator, {most} B driver]"))
        notes.append(f"{ph}: {(got - least) / 2**20:+.1f} MiB beyond PyTorch's allocator, "
                     f"{(most - got) / 2**20:.1f} MiB more taken by the driver")
    if held is None:
        out.append(("driver", False, how))
    else:
        rest = held - used["train"]
        out.append(("driver", 0 <= held - used["train"] and rest <= CONTEXT_MAX,
                    f"{how}: {held} B, context and kernels {rest / 2**20:.0f} MiB"))
    out.append(within("launches", gained(seen["train"]["text"], seen["profile"]["text"],
                                         "zernel_cuda_launch_latency_seconds_count", pid=pid),
                      seen["profile"]["launches"], LAUNCH_REL, LAUNCH_ABS))
    return pid, out, notes


def check_sync(python, env, port):
    pid, got, before, after = measured(python, SYNC_JOB, env, port)
    out = [within("gpu state", gained(before, after, "zernel_thread_state_seconds_total",
                                      pid=pid, state="gpu"),
                  got["sync_s"], SYNC_REL, SYNC_ABS, " s"),
           within("sync sum", gained(before, after, "zernel_cuda_sync_latency_seconds_sum", pid=pid),
                  got["sync_s"], SYNC_REL, SYNC_ABS, " s")]
    oncpu = gained(before, after, "zernel_thread_state_seconds_total", pid=pid, state="oncpu")
    return pid, out, [f"oncpu state gained {oncpu} s"]


def stalls(port):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/stalls", timeout=5) as resp:
        return json.loads(resp.read().decode())


def check_verdict(python, env, port, want):
    """The job's verdict over its life (the collector's window is longer)."""
    code = VERDICT_JOBS[want].replace("VERDICT_S", str(VERDICT_S)) + JOB_LOOP
    job = Job(python, code, env)
    try:
        job.settled("run")
        doc = stalls(port)
    finally:
        job.close()
    mine = [p for p in doc.get("processes", []) if p.get("pid") == job.pid]
    explain = mine[0].get("explain") if mine else None
    if not explain:
        return job.pid, [("verdict", False, "no verdict for the pid in /api/stalls")], []
    shares = ", ".join(f"{k} {v:.2f}" for k, v in explain.get("shares", {}).items() if v >= 0.01)
    return job.pid, [("verdict", explain.get("verdict") == want,
                      f"{explain.get('verdict')}, want {want}")], [f"shares: {shares}"]


def check_nccl(python, env, port, plugin):
    """The NCCL job runs with Zernel's profiler plugin loaded, whose GPU
    spans are reported beside the host-side counts (a one-rank
    communicator may run no kernel for its all-reduce: a note, not a check)."""
    env = dict(env, GPU_CHECK_PORT=str(port + 7), NCCL_PROFILER_PLUGIN=plugin)
    pid, got, before, after = measured(python, NCCL_JOB, env, port)
    out = [within("calls", gained(before, after, "zernel_nccl_calls_total", op="all_reduce"),
                  got["calls"], 0, 0),
           within("bytes", gained(before, after, "zernel_nccl_bytes_total", op="all_reduce"),
                  got["bytes"], 0, 0, " B")]
    rows = total(after, "zernel_nccl_comm_info", pid=pid, world_size="1")
    out.append(("comm", rows is not None and rows >= 1,
                "no zernel_nccl_comm_info row with world_size 1" if rows is None
                else f"{rows:.0f} row(s)"))
    states = {st: gained(before, after, "zernel_thread_state_seconds_total", pid=pid, state=st)
              for st in ("oncpu", "gpu", "collective")}
    spans = gained(before, after, "zernel_nccl_comm_gpu_seconds_count", pid=pid)
    gpu_s = gained(before, after, "zernel_nccl_comm_gpu_seconds_sum", pid=pid)
    return pid, out, ["states gained (s): " + ", ".join(f"{k} {v}" for k, v in states.items()),
                      f"GPU spans from the profiler plugin: {spans} for {got['calls']} "
                      f"all-reduces, {gpu_s} s on the GPU"]


def start_exporter(build, shm, port, sandbox):
    args = [os.path.join(build, "zernel-exporter"), "--shm", shm,
            "--metrics-listen", f"127.0.0.1:{port}", "--ws-listen", f"127.0.0.1:{port + 1}"]
    exp = subprocess.Popen(args + ([] if sandbox else ["--no-sandbox"]))
    for _ in range(50):
        time.sleep(0.1)
        if exp.poll() is not None:
            return None
        try:
            scrape(port)
            return exp
        except OSError:
            pass
    exp.kill()
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build", help="folder with zernel-collector/-exporter")
    ap.add_argument("--python", default=sys.executable, help="Python with CUDA PyTorch")
    ap.add_argument("--port", type=int, default=19391)
    ap.add_argument("--only", action="append",
                    help="run these jobs only (memory, verdict, sync, nccl)")
    ap.add_argument("--lib", action="append", default=[],
                    help="passed to the collector: a driver the loader's cache does not name")
    args = ap.parse_args()
    preflight(args.python)

    shm = f"/zernel-gpucheck-{os.getpid()}"
    col = subprocess.Popen([os.path.join(args.build, "zernel-collector"), "--shm", shm,
                            "--publish-interval", "200"] +
                           [a for lib in args.lib for a in ("--lib", lib)])
    exp = None
    rows = []
    env = dict(os.environ)
    try:
        time.sleep(3)
        if col.poll() is not None:
            sys.exit(f"gpu-check: the collector ended: exit {col.returncode}")
        exp = start_exporter(args.build, shm, args.port, True)
        if not exp:
            print("gpu-check: the sandboxed exporter did not answer; again with --no-sandbox",
                  file=sys.stderr)
            exp = start_exporter(args.build, shm, args.port, False)
        if not exp:
            sys.exit("gpu-check: the exporter did not answer")
        text = scrape(args.port)
        for name in ("zernel_collector_probes_attached", "zernel_collector_libraries_attached",
                     "zernel_collector_entry_points_checked",
                     "zernel_collector_entry_points_bypassed"):
            print(f"{name} {total(text, name)}")
        jobs = [(f"memory/{m}", lambda e=e: check_memory(args.python, dict(env, **e), args.port))
                for m, e in MEMORY_MODES]
        jobs += [(f"verdict/{v}", lambda v=v: check_verdict(args.python, env, args.port, v))
                 for v in VERDICT_JOBS]
        jobs += [("sync", lambda: check_sync(args.python, env, args.port)),
                 ("nccl", lambda: check_nccl(args.python, env, args.port,
                                             os.path.abspath(os.path.join(
                                                 args.build, "libzernel-nccl-profiler.so"))))]
        for name, fn in jobs:
            if args.only and name.split("/")[0] not in args.only:
                continue
            try:
                pid, verdicts, notes = fn()
            except (RuntimeError, OSError, KeyError, ValueError) as e:
                pid, verdicts, notes = 0, [("job", False, str(e))], []
            rows.append((name, pid, verdicts))
            print(f"{name:<24} {pid:>8}  " + "; ".join(
                f"{n} {'ok' if ok else 'FAIL'} ({d})" for n, ok, d in verdicts), flush=True)
            for note in notes:
                print(f"{'':<34}{note}", flush=True)
    finally:
        for p in (exp, col):
            if p and p.poll() is None:
                p.send_signal(signal.SIGTERM)
                p.wait(timeout=10)

    failed = sum(1 for _, _, v in rows for _, ok, _ in v if not ok)
    print("gpu-check: " + ("all figures within tolerance" if not failed
                           else f"{failed} figures beyond tolerance"))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
