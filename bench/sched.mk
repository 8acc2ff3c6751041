# SPDX-License-Identifier: BSD-2-Clause
#
# `make bench-sched`: cost of the scheduler probe on unwatched and watched
# processes, against the kernel's floor (empty programs on the same
# tracepoints), and on a PyTorch training loop.  Needs root.
# BENCH_SCHED_FLAGS: collector flags to measure a configuration with, as
# `make bench-sched BENCH_SCHED_FLAGS=--no-python-frames`.

BENCH_SCHED        := $(BUILD)/bench/bench_sched
BENCH_SCHED_SKEL   := $(BUILD)/bench/sched_floor.skel.h

$(BUILD)/bench/sched_floor.bpf.o: bench/sched_floor.bpf.c $(VMLINUX_H)
	$(call msg,BPF,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) -g -O2 -target bpf -D__TARGET_ARCH_$(ARCH) -I$(BUILD)/bpf -I. \
		-Wall -Werror -c $< -o $@
	$(Q)llvm-strip -g $@ 2>/dev/null || true

$(BENCH_SCHED_SKEL): $(BUILD)/bench/sched_floor.bpf.o
	$(call msg,SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name sched_floor_bpf > $@.tmp && mv $@.tmp $@

$(BUILD)/bench/bench_sched.o: | $(BENCH_SCHED_SKEL)

$(BENCH_SCHED): $(BUILD)/bench/bench_sched.o $(LIB_SHM) $(LIB_COMMON)
	$(call msg,LD,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(LDFLAGS) $^ -lbpf -lelf -lz -lpthread -lm -o $@

.PHONY: bench-sched
bench-sched: $(BENCH_SCHED) $(COLLECTOR)
	$(Q)$(BENCH_SCHED) $(abspath $(COLLECTOR)) $(abspath bench/torch_train.py) $(BENCH_SCHED_FLAGS)

bench: bench-sched
