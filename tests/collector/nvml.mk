# SPDX-License-Identifier: BSD-2-Clause
#
# A fake NVML (libnvidia-ml.so.1) for the collector's GPU totals and the
# driver's figures (tests/collector/check_nvml*.c): the full one, one
# without nvmlDeviceGetMemoryInfo, one with only the unversioned process
# list of older drivers and one with the _v3 entry of the 535.43 to 535.86
# drivers, each in a folder of its own so that
# LD_LIBRARY_PATH can point the collector at exactly one.

FAKE_NVML_DIR    := $(BUILD)/tests/fakes/nvml
FAKE_NVML        := $(FAKE_NVML_DIR)/libnvidia-ml.so.1
FAKE_NVML_NOMEM  := $(BUILD)/tests/fakes/nvml-nomem/libnvidia-ml.so.1
FAKE_NVML_V1     := $(BUILD)/tests/fakes/nvml-v1/libnvidia-ml.so.1
FAKE_NVML_CC     := $(BUILD)/tests/fakes/nvml-cc/libnvidia-ml.so.1
FAKE_NVML_CFLAGS  = -O2 -g -fPIC -fvisibility=hidden -Wall -Wextra -Werror -std=gnu11

TEST_ARTIFACTS += $(FAKE_NVML) $(FAKE_NVML_NOMEM) $(FAKE_NVML_V1) $(FAKE_NVML_CC)

$(FAKE_NVML): tests/fakes/fake_nvml.c
	$(call msg,FAKE,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(FAKE_NVML_CFLAGS) -shared -Wl,-soname,libnvidia-ml.so.1 $< -o $@

$(FAKE_NVML_NOMEM): tests/fakes/fake_nvml.c
	$(call msg,FAKE,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(FAKE_NVML_CFLAGS) -DFAKE_NVML_NO_MEMINFO -shared \
		-Wl,-soname,libnvidia-ml.so.1 $< -o $@

$(FAKE_NVML_V1): tests/fakes/fake_nvml.c
	$(call msg,FAKE,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(FAKE_NVML_CFLAGS) -DFAKE_NVML_PROCS_V1 -shared \
		-Wl,-soname,libnvidia-ml.so.1 $< -o $@

$(FAKE_NVML_CC): tests/fakes/fake_nvml.c
	$(call msg,FAKE,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(FAKE_NVML_CFLAGS) -DFAKE_NVML_PROCS_CC -shared \
		-Wl,-soname,libnvidia-ml.so.1 $< -o $@
