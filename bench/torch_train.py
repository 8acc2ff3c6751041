# SPDX-License-Identifier: BSD-2-Clause
#
# A small PyTorch training loop on the CPU, fed by a two-worker DataLoader,
# for bench_sched: it prints "ready", then for each line SECONDS on its
# stdin trains that long on a fresh iterator (its workers fork anew, so a
# collector watching the trainer watches them too) and prints
# "steps_per_s=X cpu_s=Y", Y the CPU time of the trainer and its workers
# over the round.  Run with Debian's /usr/bin/python3 (python3-torch).

import gc
import os
import sys
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset


class Synthetic(Dataset):
    """Items made on the fly: a little CPU work per item in the workers."""

    def __len__(self):
        return 1 << 30

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        x = torch.randn(64, generator=g)
        return x, int(x.sum() > 0)


def main():
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = nn.CrossEntropyLoss()
    print("ready", flush=True)
    for line in sys.stdin:
        seconds = float(line)
        c0 = os.times()
        it = iter(DataLoader(Synthetic(), batch_size=64, num_workers=2))
        for _ in range(3):      # the workers are up and ahead
            next(it)
        steps = 0
        t0 = time.monotonic()
        end = t0 + seconds
        while time.monotonic() < end:
            x, y = next(it)
            opt.zero_grad()
            loss_fn(model(x), y).backward()
            opt.step()
            steps += 1
        rate = steps / (time.monotonic() - t0)
        del it
        gc.collect()            # the workers are joined: their time is ours
        c1 = os.times()
        cpu = sum(c1[k] - c0[k] for k in range(4))
        print(f"steps_per_s={rate:.3f} cpu_s={cpu:.3f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
