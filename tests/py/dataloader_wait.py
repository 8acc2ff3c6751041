# SPDX-License-Identifier: BSD-2-Clause
#
# A real PyTorch DataLoader whose items take a known time to read: each
# __getitem__ blocks in read(2) on a timerfd armed for DELAY_MS, the way a
# read from slow storage blocks.  Run with Debian's /usr/bin/python3.
#
# usage: dataloader_wait.py NUM_WORKERS ITEMS BATCH DELAY_MS
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


class Timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


class Itimerspec(ctypes.Structure):
    _fields_ = [("it_interval", Timespec), ("it_value", Timespec)]


_libc = ctypes.CDLL(None, use_errno=True)


class SlowStorage(Dataset):
    """Items whose read blocks for delay_ns, in whichever process reads."""

    def __init__(self, items, delay_ns):
        self.items = items
        self.delay_ns = delay_ns
        self._fd = None
        self._pid = None
        # Reads that slept, and those that lasted (10 ms, 50 ms]: the
        # ground truth of this process (the trainer when num_workers=0).
        self.waits = 0
        self.long_waits = 0

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

    def __getitem__(self, i):
        fd = self._timer()
        spec = Itimerspec(Timespec(0, 0),
                          Timespec(self.delay_ns // 1000000000,
                                   self.delay_ns % 1000000000))
        if _libc.timerfd_settime(fd, 0, ctypes.byref(spec), None) != 0:
            raise OSError(ctypes.get_errno(), "timerfd_settime")
        nv0 = resource.getrusage(resource.RUSAGE_THREAD).ru_nvcsw
        t0 = time.monotonic_ns()
        os.read(fd, 8)  # blocks until the timer fires: the slow read
        took = time.monotonic_ns() - t0
        if resource.getrusage(resource.RUSAGE_THREAD).ru_nvcsw != nv0:
            self.waits += 1
            self.long_waits += 10000000 < took <= 50000000
        return torch.full((4,), float(i))


def wait_usr1():
    signal.sigwait({signal.SIGUSR1})


def main():
    if len(sys.argv) != 5:
        sys.exit("usage: dataloader_wait.py NUM_WORKERS ITEMS BATCH DELAY_MS")
    workers, items, batch, delay_ms = (int(a) for a in sys.argv[1:])
    # A test that dies does not leave this process behind (PR_SET_PDEATHSIG).
    _libc.prctl(1, signal.SIGKILL)
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1})
    torch.set_num_threads(1)
    storage = SlowStorage(items, delay_ms * 1000000)
    loader = DataLoader(storage,
                        batch_size=batch, num_workers=workers,
                        persistent_workers=workers > 0, shuffle=False)
    print(f"ready pid={os.getpid()}", flush=True)
    wait_usr1()

    batches = (items + batch - 1) // batch
    it = iter(loader)
    waited = 0
    seen = 0
    for _ in range(batches):
        t0 = time.monotonic_ns()
        b = next(it)
        waited += time.monotonic_ns() - t0
        seen += b.shape[0]
    worker_pids = [w.pid for w in getattr(it, "_workers", [])]
    print(f"batches={batches}")
    print(f"items={seen}")
    print(f"next_total_ns={waited}")
    print(f"workers={len(worker_pids)}")
    print(f"own_read_waits={storage.waits}")
    print(f"own_read_long={storage.long_waits}")
    for n, pid in enumerate(worker_pids):
        print(f"worker{n}={pid}")
    print("done", flush=True)
    wait_usr1()
    del it
    return 0


if __name__ == "__main__":
    sys.exit(main())
