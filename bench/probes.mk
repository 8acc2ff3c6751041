# SPDX-License-Identifier: BSD-2-Clause
#
# `make bench-probes`: probe cost per call on a launch-heavy loop, against
# the kernel's floor (empty BPF programs on the same uprobe) and bpftrace.
# Needs root.

BENCH_PROBES       := $(BUILD)/bench/bench_probes
BENCH_FLOOR_SKEL   := $(BUILD)/bench/probe_floor.skel.h
BENCH_EMPTY_LIB    := $(BUILD)/bench/bench-cuda.so

$(BENCH_EMPTY_LIB): bench/empty_launch.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) -O2 -g -fPIC -shared -Wall -Wextra -Werror -std=gnu11 $< -o $@

$(BUILD)/bench/probe_floor.bpf.o: bench/probe_floor.bpf.c $(VMLINUX_H)
	$(call msg,BPF,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) -g -O2 -target bpf -D__TARGET_ARCH_$(ARCH) -I$(BUILD)/bpf -I. \
		-Wall -Werror -c $< -o $@
	$(Q)llvm-strip -g $@ 2>/dev/null || true

$(BENCH_FLOOR_SKEL): $(BUILD)/bench/probe_floor.bpf.o
	$(call msg,SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name probe_floor_bpf > $@.tmp && mv $@.tmp $@

$(BUILD)/bench/bench_probes.o: | $(BENCH_FLOOR_SKEL)

$(BENCH_PROBES): $(BUILD)/bench/bench_probes.o $(LIB_SHM) $(LIB_COMMON)
	$(call msg,LD,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(LDFLAGS) $^ -lbpf -lelf -lz -ldl -lm -o $@

.PHONY: bench-probes
bench-probes: $(BENCH_PROBES) $(COLLECTOR) $(BENCH_EMPTY_LIB)
	$(Q)$(BENCH_PROBES) $(abspath $(COLLECTOR)) $(abspath $(BENCH_EMPTY_LIB))

bench: bench-probes
