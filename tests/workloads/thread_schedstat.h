/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The kernel's own accounting of the calling thread (schedstat): the
 * workloads subtract its run-queue wait from the wall time of a wait, so
 * that their ground truth is what the collector is asked to report on a
 * busy machine too, where a thread woken from a sleep may queue a while
 * before it runs (time the collector counts as runq, not as the sleep).
 */
#ifndef ZERNEL_TESTS_THREAD_SCHEDSTAT_H
#define ZERNEL_TESTS_THREAD_SCHEDSTAT_H

#include <stdio.h>

/* Run-queue wait (ns) and timeslices of the calling thread; zeros if unread. */
static inline void thread_schedstat(unsigned long long *run_delay, unsigned long long *slices)
{
	unsigned long long cpu = 0;
	FILE *f = fopen("/proc/thread-self/schedstat", "re");

	*run_delay = *slices = 0;
	if (!f)
		return;
	if (fscanf(f, "%llu %llu %llu", &cpu, run_delay, slices) != 3)
		*run_delay = *slices = 0;
	fclose(f);
}

#endif
