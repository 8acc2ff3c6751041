# SPDX-License-Identifier: BSD-2-Clause
#
# A real PyTorch DataLoader whose items take a known time to read: each
# __getitem__ blocks in read(2) on a timerfd armed for DELAY_MS, the way a
# read from slow storage blocks.  Run with Debian's /usr/bin/python3.
#
# usage: dataloader_wait.py NUM_WORKERS ITEMS BATCH DELAY_MS [STEP_MS [OPT,...]]
#
# STEP_MS: after each batch, a training step: matrix products on the CPU
# for that long.  OPT helper: a helper thread that sits in poll() a second
# at a time, as the CUDA driver's event thread or NCCL's proxy thread do.
# OPT paced: storage delivers item i at a fixed time, DELAY_MS after the
# epoch starts and DELAY_MS / NUM_WORKERS apart, so the workers finish in
# turn (each item still takes a worker about DELAY_MS) and a batch of one
# is ready every DELAY_MS / NUM_WORKERS.  OPT decode: each item, once
# read, is decoded for DECODE_MS on the CPU, as an image is, so that each
# read is a wait of its own.  OPT pin: pin_memory=True, with a stand-in for
# the CUDA calls only (Debian's PyTorch has no CUDA): the real pin-memory
# thread hands each batch over through its queue.Queue, so the trainer
# waits on a futex.  OPT store: after each step the trainer reads a key
# from a c10d TCPStore that a timer thread sets STORE_MS later, as a rank
# waits on its rendezvous store: a blocking recv outside the DataLoader.
# OPT warm: WARM_BATCHES batches before the epoch's, a pause, then "warm 1"
# and a wait for SIGUSR1 (its workers alive), so that what a watcher learns
# from the first batches (where next() is), and their waits, come before
# the batches timed; SIGUSR2 instead asks for WARM_BATCHES more and
# "warm 2", and so on up to WARM_ROUNDS (a watcher that bounds the stalls
# it names a second may name none of the first ones on a busy machine).
#
# Its threads run with a switch interval of SWITCH_INTERVAL_S, not the
# default 5 ms (its workers inherit it): the interpreter's lock still
# changes hands inside next() wherever next() blocks, but not at whatever
# line stands near it, which this process's own timing of next() would
# count and a watcher rightly would not.
#
# Protocol (tests/tu_waits.h): prints "ready pid=N", waits for SIGUSR1,
# iterates one epoch, prints key=value results and "done", then waits for
# a second SIGUSR1 with its workers still alive (persistent_workers).

import ctypes
import os
import resource
import signal
import sys
import time

import torch
from torch.utils.data import DataLoader, Dataset

CLOCK_MONOTONIC = 1
TFD_CLOEXEC = 0o2000000
TFD_TIMER_ABSTIME = 1
# Twice the collector's default gap between two blocks of one wait.
DECODE_MS = 2
STORE_MS = 10
WARM_BATCHES = 2
WARM_ROUNDS = 5
# Twenty times the collector's default gap: the warm batches' last wait
# is over before the timed ones start, by any watcher's rule.
WARM_PAUSE_MS = 20
# The interpreter's lock changes hands where this thread lets it go (see
# main()).
SWITCH_INTERVAL_S = 1.0


class Timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


class Itimerspec(ctypes.Structure):
    _fields_ = [("it_interval", Timespec), ("it_value", Timespec)]


_libc = ctypes.CDLL(None, use_errno=True)


class SlowStorage(Dataset):
    """Items whose read blocks for delay_ns, in whichever process reads."""

    def __init__(self, items, delay_ns, pace_ns, decode_ns):
        self.items = items
        self.delay_ns = delay_ns
        self.pace_ns = pace_ns
        self.decode_ns = decode_ns
        self.t0 = 0
        self._fd = None
        self._pid = None
        # Reads that slept, and those that lasted (10 ms, 50 ms]: the
        # ground truth of this process (the trainer when num_workers=0).
        self.waits = 0
        self.long_waits = 0
        # Every process's reads that slept, "pid ns" a line (O_APPEND:
        # the workers' lines never mix), for their medians at the end;
        # opened in each process, whichever way its workers start.
        self.log_path = None
        self._log = None
        self._log_pid = None

    def __len__(self):
        return self.items

    def _timer(self):
        # One timerfd per process: workers are forked copies.
        if self._pid != os.getpid():
            fd = _libc.timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC)
            if fd < 0:
                raise OSError(ctypes.get_errno(), "timerfd_create")
            self._fd, self._pid = fd, os.getpid()
        return self._fd

    def _log_read(self, took):
        if self.log_path is None:
            return
        if self._log_pid != os.getpid():
            self._log = os.open(self.log_path, os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC)
            self._log_pid = os.getpid()
        os.write(self._log, b"%d %d\n" % (os.getpid(), took))

    def __getitem__(self, i):
        fd = self._timer()
        delay, flags = self.delay_ns, 0
        if self.pace_ns:
            delay, flags = self.t0 + self.delay_ns + i * self.pace_ns, TFD_TIMER_ABSTIME
        spec = Itimerspec(Timespec(0, 0),
                          Timespec(delay // 1000000000, delay % 1000000000))
        if _libc.timerfd_settime(fd, flags, ctypes.byref(spec), None) != 0:
            raise OSError(ctypes.get_errno(), "timerfd_settime")
        nv0 = resource.getrusage(resource.RUSAGE_THREAD).ru_nvcsw
        t0 = time.monotonic_ns()
        os.read(fd, 8)  # blocks until the timer fires: the slow read
        took = time.monotonic_ns() - t0
        if resource.getrusage(resource.RUSAGE_THREAD).ru_nvcsw != nv0:
            self.waits += 1
            self.long_waits += 10000000 < took <= 50000000
            self._log_read(took)
        end = time.monotonic_ns() + self.decode_ns
        while time.monotonic_ns() < end:
            pass
        return torch.full((4,), float(i))


def train_step(step_ns, x, w):
    """CPU work for step_ns, as a model's forward and backward would do."""
    end = time.monotonic_ns() + step_ns
    while time.monotonic_ns() < end:
        x = torch.tanh(x @ w)
    return x


def idle_helper(stop_r):
    """Blocks in poll() a second at a time, then works 5 ms, until told to stop."""
    import select
    p = select.poll()
    p.register(stop_r, select.POLLIN)
    while not p.poll(1000):
        end = time.monotonic_ns() + 5000000
        while time.monotonic_ns() < end:
            pass


def wait_usr1():
    signal.sigwait({signal.SIGUSR1})


def warm_up(it, warm):
    """warm batches, a pause, "warm N"; again while SIGUSR2 asks (WARM_ROUNDS)."""
    for n in range(1, WARM_ROUNDS + 1):
        for _ in range(warm):
            next(it)
        # A block outside next() longer than a watcher's gap between two
        # blocks of one wait: by the time this process blocks for a signal
        # the watcher has ended the last warm batch's wait, whether or not
        # it knows next() by then.
        time.sleep(WARM_PAUSE_MS / 1000)
        print(f"warm {n}", flush=True)
        asked = {signal.SIGUSR1} if n == WARM_ROUNDS else {signal.SIGUSR1, signal.SIGUSR2}
        if signal.sigwait(asked) == signal.SIGUSR1:
            return


def stand_in_for_cuda_pinning():
    """What pin_memory=True needs of CUDA, as no-ops: the rest is PyTorch's own."""
    import torch.utils.data._utils.pin_memory as pinning
    torch.cuda.is_available = lambda: True
    torch.cuda.current_device = lambda: 0
    torch.cuda.set_device = lambda device: None
    pinning.pin_memory = lambda data, device=None: data


class SlowStore:
    """A c10d TCPStore whose keys a timer thread sets STORE_MS after they are asked for."""

    def __init__(self):
        import torch.distributed as dist
        self.server = dist.TCPStore("127.0.0.1", 0, 1, True)
        self.client = dist.TCPStore("127.0.0.1", self.server.port, 1, False)
        self.n = 0
        self.waited = 0
        self.longest = 0
        self.slept = 0

    def read(self):
        import threading
        key = f"step{self.n}"
        self.n += 1
        # Timed from before the timer starts: on a busy machine this
        # thread may get its CPU back well after the timer's thread did.
        t0 = time.monotonic_ns()
        threading.Timer(STORE_MS / 1000, self.server.set, args=(key, "1")).start()
        nv0 = resource.getrusage(resource.RUSAGE_THREAD).ru_nvcsw
        self.client.get(key)
        took = time.monotonic_ns() - t0
        self.waited += took
        self.longest = max(self.longest, took)
        # The read blocked, unless this thread came back to it late.
        self.slept += resource.getrusage(resource.RUSAGE_THREAD).ru_nvcsw != nv0


def main():
    if len(sys.argv) not in (5, 6, 7):
        sys.exit("usage: dataloader_wait.py NUM_WORKERS ITEMS BATCH DELAY_MS "
                 "[STEP_MS [HELPER]]")
    workers, items, batch, delay_ms = (int(a) for a in sys.argv[1:5])
    step_ns = int(sys.argv[5]) * 1000000 if len(sys.argv) > 5 else 0
    opts = sys.argv[6].split(",") if len(sys.argv) > 6 else []
    helper = "helper" in opts
    pin = "pin" in opts
    if pin:
        stand_in_for_cuda_pinning()
    store = SlowStore() if "store" in opts else None
    # A test that dies does not leave this process behind (PR_SET_PDEATHSIG).
    _libc.prctl(1, signal.SIGKILL)
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1, signal.SIGUSR2})
    torch.set_num_threads(1)
    # This process's other threads (the index queues' feeders, a helper)
    # take the interpreter's lock where this one lets it go, in a blocking
    # call or a torch op, not by asking it to drop the lock wherever it
    # stands: such a handoff, just before or after next(), would be a
    # sleep in this process's own count around next() but outside it.
    sys.setswitchinterval(SWITCH_INTERVAL_S)
    pace = delay_ms * 1000000 // max(workers, 1) if "paced" in opts else 0
    decode = DECODE_MS * 1000000 if "decode" in opts else 0
    warm = WARM_BATCHES if "warm" in opts else 0
    storage = SlowStorage(items + warm * batch * WARM_ROUNDS, delay_ms * 1000000, pace,
                          decode)
    reads_path = "/tmp/zernel-dl-reads-%d" % os.getpid()
    os.close(os.open(reads_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600))
    storage.log_path = reads_path
    loader = DataLoader(storage,
                        batch_size=batch, num_workers=workers,
                        persistent_workers=workers > 0, shuffle=False,
                        pin_memory=pin)
    x = torch.ones(16, 64)
    w = torch.full((64, 64), 0.01)
    stop_r, stop_w = os.pipe()
    if helper:
        import threading
        helper_thread = threading.Thread(target=idle_helper, args=(stop_r,))
        helper_thread.start()
    print(f"ready pid={os.getpid()}", flush=True)
    wait_usr1()

    batches = (items + batch - 1) // batch
    storage.t0 = time.monotonic_ns()  # before the workers fork: they share it
    it = iter(loader)
    if warm:
        warm_up(it, warm)
    waited = 0
    first = 0
    seen = 0
    slept = []
    left = []
    left_off = []
    took_all = []
    for _ in range(batches):
        r0 = resource.getrusage(resource.RUSAGE_THREAD)
        nv0 = r0.ru_nvcsw
        c0 = time.thread_time_ns()
        t0 = time.monotonic_ns()
        b = next(it)
        took = time.monotonic_ns() - t0
        # Of which off the CPU: what a scheduler sees of a wait.
        off = took - (time.thread_time_ns() - c0)
        waited += took
        first = first or took
        took_all.append(took)
        # The batches the trainer slept for: its ground truth per batch.
        r1 = resource.getrusage(resource.RUSAGE_THREAD)
        if r1.ru_nvcsw != nv0:
            slept.append(took)
        # Those it left the CPU in, asleep or preempted: the waits a scheduler
        # sees, and a few more (a preemption as getrusage returns, before
        # next(), counts here).
        if r1.ru_nvcsw != nv0 or r1.ru_nivcsw != r0.ru_nivcsw:
            left.append(took)
            left_off.append(off)
        seen += b.shape[0]
        # Its storage goes now, not as the next batch replaces it inside
        # the timing of next(): freeing a worker's shared memory lets go
        # of the interpreter's lock, and taking it back may wait for the
        # index queues' feeder threads, a wait outside next() itself.
        del b
        if step_ns:
            x = train_step(step_ns, x, w)
        if store:
            store.read()
    worker_pids = [w.pid for w in getattr(it, "_workers", [])]
    print(f"batches={batches}")
    print(f"items={seen}")
    print(f"next_total_ns={waited}")
    print(f"next_first_ns={first}")
    slept.sort()
    left.sort()
    left_off.sort()
    for pct in (40, 50, 60):
        at = left_off[len(left_off) * pct // 100] if left_off else 0
        print(f"next_left_off_p{pct}_ns={at}")
    took_all.sort()
    print(f"next_left={len(left)}")
    print(f"next_left_p50_ns={left[len(left) // 2] if left else 0}")
    print(f"next_left_over_10ms={sum(t > 10000000 for t in left)}")
    print(f"next_p50_ns={took_all[len(took_all) // 2]}")
    print(f"next_slept={len(slept)}")
    print(f"next_slept_p50_ns={slept[len(slept) // 2] if slept else 0}")
    print(f"workers={len(worker_pids)}")
    print(f"pin_thread={int(getattr(it, '_pin_memory_thread', None) is not None)}")
    print(f"store_reads={store.n if store else 0}")
    print(f"store_total_ns={store.waited if store else 0}")
    print(f"store_slept={store.slept if store else 0}")
    print(f"store_max_ns={store.longest if store else 0}")
    print(f"own_read_waits={storage.waits}")
    print(f"own_read_long={storage.long_waits}")
    reads = {}
    with open(reads_path) as f:
        for line in f:
            pid, took = (int(v) for v in line.split())
            reads.setdefault(pid, []).append(took)
    os.unlink(reads_path)
    for n, pid in enumerate(worker_pids):
        print(f"worker{n}={pid}")
        # Its reads that slept, as it timed them (their time on a run
        # queue after the timer fired included): median and third quartile.
        own = sorted(reads.get(pid, []))
        print(f"worker{n}_read_p50_ns={own[len(own) // 2] if own else 0}")
        print(f"worker{n}_read_p75_ns={own[len(own) * 3 // 4] if own else 0}")
    print("done", flush=True)
    wait_usr1()
    os.write(stop_w, b"x")
    if helper:
        helper_thread.join()
    del it
    return 0


if __name__ == "__main__":
    sys.exit(main())
