/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Stall sites of watched Python processes: time per (pid, state, Python
 * site) and each process's interpreter status, part of the aggregation
 * (collector/agg/agg.h) and published with it.  Both tables are bounded by
 * their segment capacity: a site or process that does not fit is counted
 * as an overflow of its table, and its time still counts in the
 * process's unsampled total.  Collector-internal.
 */
#ifndef ZERNEL_AGG_STALL_H
#define ZERNEL_AGG_STALL_H

#include <stdint.h>

#include "collector/agg/agg.h"

/* One Python frame, named. */
struct stall_frame {
	char file[SHM_SITE_FILE_LEN];
	char func[SHM_SITE_FUNC_LEN];
	uint32_t line;			/* 0: unknown */
};

/* Where a stall happened: the user's innermost frame, and the innermost. */
struct stall_where {
	struct stall_frame site;
	struct stall_frame leaf;
	int32_t native_stack;		/* -1: none */
	uint32_t flags;			/* SHM_SITE_* */
};

/* A process's interpreter status (SHM_PY_*) and version. */
int agg_py_status(struct agg *a, uint32_t pid, uint32_t status, uint32_t major,
		  uint32_t minor);

/*
 * One stall of thread tid of ns that ended at now_ns.  where NULL: its
 * site is not known (no Python frame, or not read), counted as
 * unsampled.  Sites come from every thread; the process's time by state
 * (shm_proc_recent.stall_ns) from its main thread alone, where a
 * training loop runs: helper threads (queue feeders, timers) wait most
 * of their life and would drown it.  -ENOENT for an unwatched pid.
 */
int agg_stall(struct agg *a, uint32_t pid, uint32_t tid, uint32_t state, uint64_t ns,
	      uint64_t now_ns, const struct stall_where *where);

/* A collective's wait (NCCL call to its sync) in pid. */
int agg_collective_wait(struct agg *a, uint32_t pid, uint64_t ns);
/*
 * The same as a span of time: pid waited on collectives from start to end.
 * Collectives queued together wait at once, so only the part after the
 * spans already counted is added: time waited, not the sum of the waits.
 */
int agg_collective_span(struct agg *a, uint32_t pid, uint64_t start_ns, uint64_t end_ns);

/* Stalls over the rate bound: time without a site. */
int agg_stall_unsampled(struct agg *a, uint32_t pid, uint64_t stalls, uint64_t ns);

#endif /* ZERNEL_AGG_STALL_H */
