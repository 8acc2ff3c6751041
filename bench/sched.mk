# SPDX-License-Identifier: BSD-2-Clause
#
# `make bench-sched`: cost of the scheduler probe on unwatched and watched
# processes, and on a PyTorch training loop.  Needs root.

BENCH_SCHED      := $(BUILD)/bench/bench_sched

$(BENCH_SCHED): $(BUILD)/bench/bench_sched.o $(LIB_SHM) $(LIB_COMMON)
	$(call msg,LD,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(LDFLAGS) $^ -lbpf -lelf -lz -lpthread -lm -o $@

.PHONY: bench-sched
bench-sched: $(BENCH_SCHED) $(COLLECTOR)
	$(Q)$(BENCH_SCHED) $(abspath $(COLLECTOR)) $(abspath bench/torch_train.py)

bench: bench-sched
