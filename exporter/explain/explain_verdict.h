/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The verdict on one training process from its shares of wall time: the
 * exporter draws it for /api/stalls, which `zernel explain` and the live
 * page show.  Kept apart from any I/O so its rules read in one place.
 * Unprivileged, pure computation.
 */
#ifndef ZERNEL_EXPLAIN_VERDICT_H
#define ZERNEL_EXPLAIN_VERDICT_H

#include <stddef.h>
#include <stdint.h>

#define EV_JOB_LEN	160	/* "torchelastic:" and a run id, or a Slurm job and step */

enum ev_share {
	EV_INPUT, EV_GPU, EV_COLLECTIVE, EV_LOCK, EV_SLEEP, EV_RUNQ, EV_OTHER, EV_ONCPU,
	EV_SHARE_COUNT
};

/* What the verdict is drawn from: one process over the window. */
struct ev_process {
	uint32_t pid;
	int32_t rank, nranks;
	double window_s;
	double share[EV_SHARE_COUNT];	/* of window_s; EV_ONCPU: the rest */
	double involuntary_per_s;
	uint64_t failed_allocs;
	double gpu_peak_fraction;	/* highest peak / total over its GPUs; 0 unknown */
	uint32_t gpu_peak_id;
	int uses_gpu;			/* launches, NCCL, GPU memory or waits seen */
	/*
	 * Which ranks it is judged with: those of its communicator, or where
	 * the communicator's id is its own (not NCCL's), those of its job.
	 */
	uint64_t comm_id;		/* NCCL's commHash of its rank; 0 unknown */
	char job[EV_JOB_LEN];		/* TORCHELASTIC_RUN_ID, Slurm job; "" unknown */
	/* Filled by ev_stragglers. */
	int32_t straggler_rank;		/* of its job; -1: none stands out */
	uint32_t straggler_pid;
	double straggler_share;		/* the straggler's collective share */
	uint32_t waited_by;		/* it is the straggler: the other ranks; else 0 */
	double waiting_share;		/* their mean collective share */
};

enum ev_verdict {
	EV_DATA_BOUND, EV_GPU_BOUND, EV_COMM_BOUND, EV_CPU_CONTENTION, EV_LOCK_CONTENTION,
	EV_SLEEPING, EV_CPU_BOUND, EV_STRAGGLER, EV_VERDICT_COUNT
};

const char *ev_share_name(enum ev_share s);
const char *ev_verdict_name(enum ev_verdict v);

/* The verdict, its evidence (one line) and recommendation (one line). */
enum ev_verdict ev_decide(const struct ev_process *p, char *evidence, size_t ev_len,
			  const char **recommendation);

/*
 * Among ranks of one job, the one that waits in collectives far less than
 * the others (the rest wait for it): fills straggler_* of each, and
 * waited_by and waiting_share of the straggler.  Ranks of other jobs on
 * the node, and ranks whose job is unknown, are never compared.
 */
void ev_stragglers(struct ev_process *const *procs, size_t n);

#endif /* ZERNEL_EXPLAIN_VERDICT_H */
