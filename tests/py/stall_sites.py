# SPDX-License-Identifier: BSD-2-Clause
#
# Python stalls at known lines: a sleep, a lock held by another thread,
# and (with "torch") a real PyTorch DataLoader whose worker takes DELAY
# per item, so the training loop waits on it.  Each site's line is marked
# "# site: NAME"; the script times each wait itself (ground truth).  A
# helper thread sleeps beside them at its own line: not a training
# thread, so none of its sleeps is a stall site.
# Run with Debian's /usr/bin/python3.
#
# usage: stall_sites.py ROUNDS DELAY_MS
#                       [torch | torch-only | spin | spin-collective |
#                        spin-collective-thread | block | collective | exec | unicode]
# (torch-only: the DataLoader alone, ROUNDS items; spin: ROUNDS calls of
# cudaDeviceSynchronize in the library named by ZERNEL_FAKE_CUDART, which
# spins on the CPU, FAKE_SYNC_SPIN_NS each; spin-collective: the same,
# each after an ncclAllReduce of the library named by ZERNEL_FAKE_NCCL, so
# that each spinning synchronisation completes a collective;
# spin-collective-thread: the same, the all-reduce queued by another
# thread (DDP's autograd thread, while the main thread waits); block:
# ROUNDS calls of its cudaStreamSynchronize, whose fake driver sleeps
# DELAY in each;
# collective: the same, each after an ncclAllReduce of the library named
# by ZERNEL_FAKE_NCCL, so that each synchronisation completes a collective;
# exec: at the first SIGUSR1, prints "exec" and runs itself again in the
# same process, which prints "ready pid=N again" and goes on as with no
# mode; unicode: ROUNDS sleeps of DELAY in each of three functions whose
# names hold a Latin-1, a CJK and an astral-plane character (the three
# kinds of CPython's compact strings), compiled under a file name that
# holds Latin-1 and CJK characters: UNICODE_FILE, lines 3, 5 and 7)
#
# Protocol (tests/collector/tu_waits.h): prints "ready pid=N", waits for
# SIGUSR1, works, prints key=value lines (nanoseconds) and "done", then
# waits for a second SIGUSR1.

import os
import signal
import sys
import threading
import time

ROUNDS = int(sys.argv[1])
DELAY = int(sys.argv[2]) / 1000.0
MODE = sys.argv[3] if len(sys.argv) > 3 else ""
TORCH = MODE in ("torch", "torch-only")
SPIN = MODE in ("spin", "spin-collective", "spin-collective-thread")
BLOCK = MODE == "block"
COLLECTIVE = MODE in ("collective", "spin-collective", "spin-collective-thread")
UNICODE = MODE == "unicode"
PLAIN = MODE in ("", "torch", "again")

if TORCH:
    import torch
    from torch.utils.data import DataLoader, Dataset

    class Slow(Dataset):
        def __len__(self):
            return ROUNDS

        def __getitem__(self, i):
            time.sleep(DELAY)
            return torch.ones(4) * i


if SPIN or BLOCK or COLLECTIVE:
    import ctypes

    cudart = ctypes.CDLL(os.environ["ZERNEL_FAKE_CUDART"])

if COLLECTIVE:
    class NcclUniqueId(ctypes.Structure):
        _fields_ = [("internal", ctypes.c_char * 128)]

    nccl = ctypes.CDLL(os.environ["ZERNEL_FAKE_NCCL"])
    nccl.ncclCommInitRank.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_int,
                                      NcclUniqueId, ctypes.c_int]
    nccl.ncclAllReduce.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t,
                                   ctypes.c_int, ctypes.c_int, ctypes.c_void_p,
                                   ctypes.c_void_p]
    comm = ctypes.c_void_p()
    if nccl.ncclCommInitRank(ctypes.byref(comm), 1, NcclUniqueId(), 0) != 0:
        sys.exit("ncclCommInitRank failed")


def run_delay_ns(fd):
    # The kernel's own per-thread accounting: ns spent waiting on a run queue.
    return int(os.pread(fd, 128, 0).split()[1])


def spinner(total, on_cpu, queued):
    if MODE == "spin-collective":
        all_reduce(None)
    elif MODE == "spin-collective-thread":
        queuer = threading.Thread(target=all_reduce, args=(None,))
        queuer.start()
        queuer.join()
    # Read right at the call's edges, so that a preemption falls in both or neither.
    fd = os.open("/proc/thread-self/schedstat", os.O_RDONLY)
    c0 = time.thread_time_ns()
    q0 = run_delay_ns(fd)
    t0 = time.monotonic_ns()
    cudart.cudaDeviceSynchronize()  # site: spin
    t1 = time.monotonic_ns()
    q1 = run_delay_ns(fd)
    on_cpu[0] += time.thread_time_ns() - c0
    os.close(fd)
    total[0] += t1 - t0
    queued[0] += q1 - q0


def blocker(total):
    # The fake driver's stream is the time its synchronisation sleeps.
    stream = ctypes.c_void_p(int(DELAY * 1e9))
    t0 = time.monotonic_ns()
    cudart.cudaStreamSynchronize(stream)  # site: block
    total[0] += time.monotonic_ns() - t0


def all_reduce(stream):
    # ncclFloat32 (7), ncclSum (0): queued; the next synchronisation completes it.
    if nccl.ncclAllReduce(None, None, 1000, 7, 0, comm, stream) != 0:
        sys.exit("ncclAllReduce failed")


def collective(total):
    stream = ctypes.c_void_p(int(DELAY * 1e9))
    all_reduce(stream)
    t0 = time.monotonic_ns()
    cudart.cudaStreamSynchronize(stream)  # site: collective
    total[0] += time.monotonic_ns() - t0


UNICODE_FILE = "/tmp/zernel-\u00fcn\u00efcode-\u540d\u524d.py"
UNICODE_SRC = (
    "import time\n"
    "def sleep_\u00e9(d):\n"
    "    time.sleep(d)\n"
    "def \u7761\u7720(d):\n"
    "    time.sleep(d)\n"
    "def \U00020000(d):\n"
    "    time.sleep(d)\n"
)


def unicode_sleeps(rounds):
    names = {}
    exec(compile(UNICODE_SRC, UNICODE_FILE, "exec"), names)
    for _ in range(rounds):
        for name in ("sleep_\u00e9", "\u7761\u7720", "\U00020000"):
            names[name](DELAY)


def wait_signal():
    signal.sigwait([signal.SIGUSR1])


def sleeper(total):
    t0 = time.monotonic_ns()
    time.sleep(DELAY)  # site: sleep
    total[0] += time.monotonic_ns() - t0


def helper(total):
    for _ in range(ROUNDS):
        t0 = time.monotonic_ns()
        time.sleep(DELAY)  # site: helper
        total[0] += time.monotonic_ns() - t0


def locked(total):
    lock = threading.Lock()
    lock.acquire()
    threading.Timer(DELAY, lock.release).start()
    t0 = time.monotonic_ns()
    lock.acquire()  # site: lock
    total[0] += time.monotonic_ns() - t0
    lock.release()


def train(total):
    loader = DataLoader(Slow(), batch_size=1, num_workers=1)
    it = iter(loader)
    while True:
        t0 = time.monotonic_ns()
        try:
            batch = next(it)  # site: data
        except StopIteration:
            break
        total[0] += time.monotonic_ns() - t0
        batch.sum()


def main():
    signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGUSR1])
    again = " again" if MODE == "again" else ""
    print("ready pid=%d%s" % (os.getpid(), again), flush=True)
    wait_signal()
    if MODE == "exec":
        print("exec", flush=True)
        os.execv(sys.executable, [sys.executable, __file__, sys.argv[1], sys.argv[2], "again"])
    sleep_ns, lock_ns, data_ns, spin_ns, spin_cpu_ns, spin_queued_ns = [0], [0], [0], [0], [0], [0]
    block_ns, coll_ns, helper_ns = [0], [0], [0]
    helping = threading.Thread(target=helper, args=(helper_ns,))
    if PLAIN:
        helping.start()
    for _ in range(ROUNDS if SPIN else 0):
        spinner(spin_ns, spin_cpu_ns, spin_queued_ns)
    for _ in range(ROUNDS if BLOCK else 0):
        blocker(block_ns)
    for _ in range(ROUNDS if MODE == "collective" else 0):
        collective(coll_ns)
    for _ in range(ROUNDS if PLAIN else 0):
        sleeper(sleep_ns)
        locked(lock_ns)
    if TORCH:
        train(data_ns)
    if UNICODE:
        unicode_sleeps(ROUNDS)
    if helping.ident:
        helping.join()
    print("sleep_ns=%d" % sleep_ns[0])
    print("lock_ns=%d" % lock_ns[0])
    print("data_ns=%d" % data_ns[0])
    print("spin_ns=%d" % spin_ns[0])
    print("spin_cpu_ns=%d" % spin_cpu_ns[0])
    print("spin_queued_ns=%d" % spin_queued_ns[0])
    print("block_ns=%d" % block_ns[0])
    print("coll_ns=%d" % coll_ns[0])
    print("helper_ns=%d" % helper_ns[0])
    print("done", flush=True)
    wait_signal()


main()
