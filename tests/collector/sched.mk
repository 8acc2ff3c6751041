# SPDX-License-Identifier: BSD-2-Clause
#
# Ground-truth workloads of the wait and scheduler probes (tests/workloads_sched).

SCHED_WORKLOAD := $(BUILD)/tests/workloads_sched/zs_work

TEST_ARTIFACTS += $(SCHED_WORKLOAD)

$(SCHED_WORKLOAD): tests/workloads_sched/zs_work.c tests/workloads/thread_schedstat.h
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) $(ALL_CFLAGS) $< -o $@ -lpthread
