# SPDX-License-Identifier: BSD-2-Clause
#
# The fake NVIDIA driver that carries NVIDIA's real runtime
# (tests/fakes/fake_driver/, a libcuda.so.1 in a folder of its own so that
# LD_LIBRARY_PATH can put exactly it under a program), and the workloads
# nvcc builds against the real libcudart.so.13: zw_mempool
# (tests/workloads/zw_mempool.cu), and zw_cudart (tests/workloads/zw_cudart.cu)
# three ways: one with the legacy default stream, one with --default-stream per-thread,
# and one with the runtime linked statically (nvcc's default), where only
# the driver's entry points can be probed.
# Without a CUDA toolkit the workloads are skipped with a message.

FAKE_DRIVER_DIR  := $(BUILD)/tests/fakes/driver
FAKE_DRIVER      := $(FAKE_DRIVER_DIR)/libcuda.so.1
FAKE_DRIVER_SRCS := $(wildcard tests/fakes/fake_driver/*.c)
FAKE_DRIVER_HDRS := $(wildcard tests/fakes/fake_driver/*.h)
# The driver API's entry points are declared by their callers (the runtime),
# not here, hence no -Wmissing-prototypes.  No identical-code folding: every
# exported function keeps an address of its own, as probes expect.
FAKE_DRIVER_CFLAGS = -O2 -g -fPIC -fvisibility=hidden -fno-ipa-icf -std=gnu11 -D_GNU_SOURCE -I. \
		     -Wall -Wextra -Werror -Wshadow -Wpointer-arith -Wstrict-prototypes

TEST_ARTIFACTS += $(FAKE_DRIVER)

$(FAKE_DRIVER): $(FAKE_DRIVER_SRCS) $(FAKE_DRIVER_HDRS)
	$(call msg,FAKE,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(FAKE_DRIVER_CFLAGS) -shared -Wl,-soname,libcuda.so.1 $(FAKE_DRIVER_SRCS) \
		-ldl -lpthread -o $@

CUDA_HOME  ?= /usr/local/cuda
NVCC       ?= $(CUDA_HOME)/bin/nvcc
# nvcc's host compiler; Debian's g++ (12 on bookworm) is one CUDA 13 supports.
NVCC_CCBIN ?= g++
ZW_CUDART      := $(BUILD)/tests/workloads/zw_cudart
ZW_CUDART_PTDS := $(BUILD)/tests/workloads/zw_cudart_ptds
ZW_CUDART_STATIC := $(BUILD)/tests/workloads/zw_cudart_static
ZW_MEMPOOL     := $(BUILD)/tests/workloads/zw_mempool
# The runtime is found in the toolkit even where ldconfig does not list it;
# libcuda.so.1 is not there, so the driver still comes from the loader's path.
ZW_CUDART_FLAGS = -ccbin $(NVCC_CCBIN) -cudart shared -O2 -Xcompiler -Wall,-Wextra,-Werror \
		  -Xlinker -rpath,$(CUDA_HOME)/lib64

ifneq ($(wildcard $(NVCC)),)
TEST_ARTIFACTS += $(ZW_CUDART) $(ZW_CUDART_PTDS) $(ZW_CUDART_STATIC) $(ZW_MEMPOOL)

$(ZW_CUDART): tests/workloads/zw_cudart.cu
	$(call msg,NVCC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(NVCC) $(ZW_CUDART_FLAGS) $< -o $@

$(ZW_CUDART_PTDS): tests/workloads/zw_cudart.cu
	$(call msg,NVCC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(NVCC) $(ZW_CUDART_FLAGS) --default-stream per-thread $< -o $@

$(ZW_CUDART_STATIC): tests/workloads/zw_cudart.cu
	$(call msg,NVCC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(NVCC) $(subst -cudart shared,-cudart static,$(ZW_CUDART_FLAGS)) $< -o $@

$(ZW_MEMPOOL): tests/workloads/zw_mempool.cu
	$(call msg,NVCC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(NVCC) $(ZW_CUDART_FLAGS) $< -o $@
else
TEST_ARTIFACTS += zw-cudart-skip

.PHONY: zw-cudart-skip
zw-cudart-skip:
	@echo "  SKIP     $(ZW_CUDART): no nvcc at $(NVCC) (CUDA toolkit absent); its tests skip too"
endif
