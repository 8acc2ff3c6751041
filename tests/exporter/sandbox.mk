# SPDX-License-Identifier: BSD-2-Clause
#
# The sandbox test helper (tests/exporter/sandbox_probe/sandbox_probe.c) for tests/exporter/check_sandbox.c.
# It links its own copy of the sandbox built with ZERNEL_TEST_HOOKS, so the
# step-failure hook exists only here, never in zernel-exporter.

SANDBOX_PROBE      := $(BUILD)/tests/sandbox_probe
SANDBOX_HOOKS_DIR  := $(BUILD)/tests/hooks
SANDBOX_HOOKS_OBJS := $(SANDBOX_HOOKS_DIR)/sandbox/sandbox.o $(SANDBOX_HOOKS_DIR)/sandbox/sandbox_filter.o \
		      $(SANDBOX_HOOKS_DIR)/sandbox_probe.o

TEST_ARTIFACTS += $(SANDBOX_PROBE)

$(SANDBOX_HOOKS_DIR)/sandbox/%.o: exporter/sandbox/%.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) -DZERNEL_TEST_HOOKS $(ALL_CFLAGS) -c $< -o $@

$(SANDBOX_HOOKS_DIR)/sandbox_probe.o: tests/exporter/sandbox_probe/sandbox_probe.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) -DZERNEL_TEST_HOOKS $(ALL_CFLAGS) -c $< -o $@

$(SANDBOX_PROBE): $(SANDBOX_HOOKS_OBJS) $(LIB_SHM) $(LIB_COMMON)
	$(call msg,LD,$@)
	$(Q)$(CC) $(LDFLAGS) $^ -lseccomp -lcap -lpthread -lm -o $@
