# SPDX-License-Identifier: BSD-2-Clause
#
# The wall-clock stepping shim (tests/fakes/clock_step.c) that
# tests/exporter/check_clock_step.c preloads into the collector and the
# exporter, so that their clock steps while the machine's stays put.

CLOCK_STEP_SHIM   := $(BUILD)/tests/fakes/libzernel-clockstep.so
# clock_gettime, gettimeofday and time are declared by libc, not here.
CLOCK_STEP_CFLAGS  = -O2 -g -fPIC -fvisibility=hidden -std=gnu11 -D_GNU_SOURCE -I. \
		     -Wall -Wextra -Werror -Wshadow -Wpointer-arith -Wstrict-prototypes

TEST_ARTIFACTS += $(CLOCK_STEP_SHIM)

$(CLOCK_STEP_SHIM): tests/fakes/clock_step.c
	$(call msg,FAKE,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CLOCK_STEP_CFLAGS) -shared $< -ldl -o $@
