/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Helpers of the wait and scheduler probe tests: run a ground-truth
 * workload (tests/workloads_sched, tests/py) that says "ready", works on
 * SIGUSR1, reports key=value lines and "done", and exits on a second
 * SIGUSR1; and read latency rows of the published segment.  Root tests.
 */
#ifndef ZERNEL_TU_WAITS_H
#define ZERNEL_TU_WAITS_H

#include <stdint.h>
#include <sys/types.h>

#include "shm/shm_layout.h"
#include "tests/collector/tu_probes.h"

struct tw_work {
	pid_t pid;
	char out[256];		/* its stdout and stderr */
};

/* Starts zs_work with args (NULL-terminated) and waits for "ready". */
int tw_start(struct tw_work *w, const char *const *args);
/* Starts argv (argv[0] a path) and waits for "ready". */
int tw_start_argv(struct tw_work *w, char *const argv[]);
/* Starts /usr/bin/python3 tests/py/<script> args and waits for "ready". */
/* The same, run by interp (an argv prefix: the interpreter, and what runs it). */
int tw_start_py_in(struct tw_work *w, const char *const *interp, const char *script,
		   const char *const *args);
int tw_start_py(struct tw_work *w, const char *script, const char *const *args);
/* Waits until the output holds the line `line`; 0 or -1 on timeout/exit. */
int tw_wait_line(struct tw_work *w, const char *line, int timeout_ms);
/* The value of the last "key=N" line, or -1 when absent. */
long long tw_value(const struct tw_work *w, const char *key);
/* Lets it work. */
void tw_go(const struct tw_work *w);
/* Lets it (and a forked worker) exit, reaps it; returns the wait status. */
int tw_finish(struct tw_work *w);

/* Starts the collector watching pid (--pid) and waits until it is. */
int tw_collector_watch_pid(struct tp_collector *c, pid_t pid);
/* Starts it with `flag value` (--pid N, --comm NAME), waits until pid is watched. */
int tw_collector_watch(struct tp_collector *c, const char *flag, const char *value, pid_t pid);
/* Starts it with --pid pidstr and the flags in more (NULL-terminated). */
int tw_collector_watch_extra(struct tp_collector *c, const char *pidstr,
			     const char *const *more, pid_t pid);
/* Starts it with extra (NULL-terminated), waits until pid is watched. */
int tw_collector_watch_args(struct tp_collector *c, const char *const *extra, pid_t pid);
/* Refreshes c->snap after everything sent so far is published. */
int tw_settle(struct tp_collector *c);

/* Samples in the Prometheus buckets with bounds in (lo_ns, hi_ns]. */
uint64_t tw_bucket_count(const struct shm_latency *l, uint64_t lo_ns, uint64_t hi_ns);
/*
 * Asserts n (the collector's count, named what) lies between the
 * workload's KEY_surely and KEY_maybe: a wait within a millisecond of a
 * bucket bound may fall on either side of it.
 */
void tw_assert_band(uint64_t n, const struct tw_work *w, const char *key, const char *what);

#define TW_MS	1000000ull

#endif /* ZERNEL_TU_WAITS_H */
