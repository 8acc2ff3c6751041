# SPDX-License-Identifier: BSD-2-Clause
#
# A small real PyTorch training run for bench/pystack_bench.sh: an MLP fed
# by a DataLoader with two workers, so that the training thread blocks on
# every batch the way a real one does.  Names itself NAME (comm) first, so
# that a collector started with --comm NAME watches it, then waits SETTLE
# seconds for the collector to see it, then times STEPS steps.
#
# usage: pystack_train.py NAME STEPS SETTLE   (prints "seconds=S")

import ctypes
import sys
import time

import torch
from torch.utils.data import DataLoader, TensorDataset

NAME, STEPS, SETTLE = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
ctypes.CDLL(None).prctl(15, NAME.encode(), 0, 0, 0)   # PR_SET_NAME
torch.manual_seed(0)
torch.set_num_threads(1)
data = TensorDataset(torch.randn(STEPS * 32, 256), torch.randint(0, 10, (STEPS * 32,)))
loader = DataLoader(data, batch_size=32, num_workers=2, persistent_workers=True)
model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
it = iter(loader)
next(it)                       # workers up
time.sleep(SETTLE)
t0 = time.monotonic()
for x, y in it:
    opt.zero_grad()
    torch.nn.functional.cross_entropy(model(x), y).backward()
    opt.step()
print("seconds=%.6f" % (time.monotonic() - t0), flush=True)
