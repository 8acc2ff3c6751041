# SPDX-License-Identifier: BSD-2-Clause
#
# `make bench-shm`: segment size, reader snapshot and writer publish costs.

BENCH_SHM := $(BUILD)/bench/bench_shm

$(BENCH_SHM): $(BUILD)/bench/bench_shm.o $(LIB_SHM_WRITER) $(LIB_SHM) $(LIB_COMMON)
	$(call msg,LD,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(LDFLAGS) $^ -lm -o $@

.PHONY: bench-shm
bench-shm: $(BENCH_SHM)
	$(Q)$(BENCH_SHM)

bench: bench-shm
