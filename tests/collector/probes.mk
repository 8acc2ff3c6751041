# SPDX-License-Identifier: BSD-2-Clause
#
# Fake CUDA/NCCL libraries with the real symbol names and the workload that
# calls them, for the probe tests (tests/collector/check_probes_*.c).

FAKE_DIR      := $(BUILD)/tests/fakes
FAKE_CFLAGS    = -O2 -g -fPIC -fvisibility=hidden -Wall -Wextra -Werror -std=gnu11 -I.
FAKE_LIBCUDA  := $(FAKE_DIR)/libcuda.so.1
FAKE_LIBCUDART:= $(FAKE_DIR)/libcudart.so
FAKE_LIBNCCL  := $(FAKE_DIR)/libnccl.so.2
ZW_CUDA       := $(BUILD)/tests/workloads/zw_cuda
ZW_SOAK       := $(BUILD)/tests/workloads/zw_soak

TEST_ARTIFACTS += $(FAKE_LIBCUDA) $(FAKE_LIBCUDART) $(FAKE_LIBNCCL) $(ZW_CUDA) $(ZW_SOAK)
# The GPU-time test runs the fake NCCL with Zernel's own profiler plugin.
TEST_ARTIFACTS += $(NCCL_PROFILER)

$(FAKE_LIBCUDA): tests/fakes/fake_libcuda.c tests/fakes/fake_cuda.h
	$(call msg,FAKE,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(FAKE_CFLAGS) -shared -Wl,-soname,libcuda.so.1 $< -o $@

# Like the real runtime, it reaches the driver's exported functions; it
# finds the fake driver next to itself wherever the pair is copied.
$(FAKE_LIBCUDART): tests/fakes/fake_libcudart.c tests/fakes/fake_cuda.h $(FAKE_LIBCUDA)
	$(call msg,FAKE,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(FAKE_CFLAGS) -shared -Wl,-soname,libcudart.so -Wl,-rpath,'$$ORIGIN' $< \
		$(FAKE_LIBCUDA) -o $@

# Its profiler plugin host is built against NCCL 2.28.9's own plugin headers.
$(FAKE_LIBNCCL): tests/fakes/fake_libnccl.c tests/fakes/fake_nccl_profiler.c \
		tests/fakes/fake_nccl_profiler.h tests/fakes/fake_cuda.h \
		$(wildcard tests/fakes/nccl_profiler_2.28.9/*.h)
	$(call msg,FAKE,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(FAKE_CFLAGS) -Itests/fakes/nccl_profiler_2.28.9 -shared \
		-Wl,-soname,libnccl.so.2 $(filter %.c,$^) -ldl -lpthread -o $@

$(ZW_CUDA) $(ZW_SOAK): $(BUILD)/tests/workloads/%: tests/workloads/%.c tests/fakes/fake_cuda.h \
		tests/workloads/thread_schedstat.h
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) -O2 -g -Wall -Wextra -Werror -std=gnu11 -D_GNU_SOURCE -I. $< -ldl -lpthread -o $@
