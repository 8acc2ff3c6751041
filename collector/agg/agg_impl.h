/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Inside the collector's aggregation state: the types agg.c (the state)
 * and agg_publish.c (copying it into the segment) share.  Private to those
 * files and agg_driver.c.
 */
#ifndef ZERNEL_AGG_IMPL_H
#define ZERNEL_AGG_IMPL_H

#include <stdint.h>

#include "collector/agg/agg.h"
#include "collector/agg/keyindex.h"
#include "collector/agg/latency.h"

struct agg_proc {
	uint32_t pid;
	uint32_t ppid;
	uint32_t watch_reason;
	char comm[SHM_COMM_LEN];
	uint64_t start_time_ns;
	struct latency_series lat[SHM_FAMILY_COUNT];
	uint64_t offcpu_preempted_ns;
	uint64_t offcpu_blocked_ns;
	uint64_t involuntary_switches;
	uint64_t voluntary_switches;
	uint64_t migrations;
	struct shm_identity id;		/* pid 0 until first set */
	uint64_t id_set_ns;		/* when it was last set; 0 never */
	uint64_t id_source;		/* digest of the files it was parsed from; 0 none */
	uint64_t thread_state_ns[SHM_STATE_COUNT];	/* training threads', ended */
	uint64_t open_state_ns[SHM_STATE_COUNT];	/* ... still open at the last read */
	uint64_t shown_state_ns[SHM_STATE_COUNT];	/* as published (agg_open_state) */
	int32_t workload;		/* its row in agg.workloads; -1 none */
	int wl_refused;			/* no row to be had: counted once, tried again at identity reads */
};

/* What p's states are published as, from now on (agg_open_state). */
void agg_proc_show_states(struct agg_proc *p);

struct agg_nccl {
	uint64_t calls;
	uint64_t bytes;
	uint64_t errors;
	struct latency_series duration;
	struct latency_series wait;
	uint64_t duration_fine[HIST_BUCKETS];	/* log-linear, cumulative (native histograms) */
	uint64_t wait_fine[HIST_BUCKETS];
};

/* One rank of one NCCL communicator (agg_nccl.c). */
/*
 * A child of a non-blocking split or shrink whose return came first: its
 * identity, until libnccl's commAlloc names its handle.
 */
#define AGG_CHILD_WAITS	64
struct agg_child_wait {
	uint32_t pid;
	uint32_t origin;
	uint64_t parent;		/* the parent's handle */
	uint64_t out;			/* where NCCL writes the child's handle in the process */
	uint64_t id;			/* the child's comm_id */
	uint64_t parent_id;
	uint32_t flags;
	uint32_t gpu;
	uint64_t ts_ns;			/* the split's return */
};

struct agg_comm {
	struct shm_nccl_comm row;	/* published as it is, but wait, gap, stalled_ns */
	uint64_t handle;		/* the ncclComm_t */
	int32_t splits;			/* NCCL's splitCount of this communicator */
	int32_t made;			/* its communicator call returned */
	uint64_t made_ns;		/* then */
	uint64_t last_done_ns;		/* last completion; 0: none */
	uint64_t pending_since_ns;	/* when pending went above 0 */
	uint64_t ended_ns;		/* destroyed or aborted then; 0: live */
	uint64_t alloc_parent;		/* commAlloc's parent, while not made */
	struct latency_series wait;
	struct latency_series gap;
	struct latency_series gpu;
};

struct agg {
	struct agg_opts opts;
	int series_ready;		/* node and NCCL series initialised */

	struct keyindex proc_idx;	/* key: pid */
	struct agg_proc *procs;		/* per slot */

	struct keyindex mem_idx;	/* key: pid << 32 | gpu */
	struct shm_gpu_mem *mem;	/* per slot */

	/* GPUs and comms are few and change rarely: plain arrays. */
	struct shm_gpu *gpus;
	uint32_t n_gpus;
	struct keyindex comm_idx;	/* key: pid, ncclComm_t */
	struct agg_comm *comms;		/* per slot */
	uint64_t comms_ended;		/* ended rows so far: each one's key */
	struct agg_child_wait child_waits[AGG_CHILD_WAITS];
	uint32_t n_child_waits;
	int (*read_u64)(void *ctx, uint32_t pid, uint64_t addr, uint64_t *val);
	void *read_ctx;
	uint64_t init_all_id;		/* comm_id of the last ncclCommInitAll's rank 0 */

	struct agg_nccl nccl[SHM_NCCL_OP_COUNT];
	struct latency_series node[SHM_FAMILY_COUNT];

	uint64_t overflows[SHM_TABLE_COUNT];
	struct shm_stats stats;

	/* Rows prepared outside the seqlock, then copied in one go. */
	struct shm_proc *stage_procs;
	struct shm_identity *stage_ids;	/* row i for stage_procs row i */
	struct shm_gpu_mem *stage_mem;
	struct shm_gpu *stage_gpus;
	struct shm_nccl_comm *stage_comms;
	struct shm_nccl_op stage_nccl[SHM_NCCL_OP_COUNT];
	struct shm_latency stage_node[SHM_FAMILY_COUNT];
	uint32_t published[SHM_TABLE_COUNT];	/* counts of the last publish */

	/* Workload histograms (agg_workload.c): rows 0..n_workloads-1 in use. */
	struct shm_workload *workloads;	/* SHM_WORKLOADS rows, published as they are */
	uint64_t *wl_empty_since;	/* per row: when its last process left; 0 while any live */
	uint32_t n_workloads;

	struct agg_stalls *stalls;	/* Python stall sites (agg_stall.c) */
	struct agg_trace_ring *trace;	/* recent notable events (agg_trace.c) */
};

/*
 * GPU and memory rows (agg.c), for the driver's figures (agg_driver.c).
 * agg_gpu_row makes a GPU's row when create and there is room (else
 * counts the overflow); agg_gpu_node_row makes it for a GPU of this node
 * only (-EINVAL for a CUDA ordinal not mapped to one, -ENOSPC when full);
 * agg_mem_insert makes a zeroed (pid, gpu) row (-ENOSPC counted when the
 * table is full) that its caller fills in.
 */
struct shm_gpu *agg_gpu_row(struct agg *a, uint32_t gpu, int create);
struct shm_gpu *agg_gpu_node_row(struct agg *a, uint32_t gpu, int *err);
struct shm_gpu_mem *agg_mem_find(const struct agg *a, uint32_t pid, uint32_t gpu);
struct shm_gpu_mem *agg_mem_insert(struct agg *a, uint32_t pid, uint32_t gpu, int *err);

/* agg_trace.c, for agg.c and agg_publish.c. */
struct agg_trace_ring *agg_trace_new(void);
void agg_trace_free(struct agg_trace_ring *r);
void agg_trace_forget(struct agg_trace_ring *r, uint32_t pid);
const struct shm_trace_event *agg_trace_rows(struct agg *a, uint32_t *n);

/* agg_stall.c, for agg.c and agg_publish.c. */
struct agg_stalls *agg_stalls_new(uint32_t procs);
void agg_stalls_free(struct agg_stalls *s);
void agg_stalls_forget(struct agg_stalls *s, uint32_t pid, int32_t slot);
void agg_stalls_rows(const struct agg_stalls *s, const struct shm_py_proc **py,
		     uint32_t *n_py, const struct shm_stall_site **site, uint32_t *n_site);
/* Stages and returns the recent rows, one per watched process. */
const struct shm_proc_recent *agg_stalls_recent(struct agg *a, uint64_t now_ns, uint32_t *n);
/*
 * agg_workload.c, for agg.c and agg_publish.c.  join puts p in the row
 * its identity names (again after the identity changed); leave takes it
 * out (exit).  The records add a sample to p's row, taking one first if
 * it has none.
 * stage drops rows empty for SHM_WORKLOAD_LINGER_NS and returns the rows
 * to publish.
 */
void agg_workload_join(struct agg *a, struct agg_proc *p);
void agg_workload_leave(struct agg *a, struct agg_proc *p);
void agg_workload_record(struct agg *a, struct agg_proc *p, enum shm_family family,
			 uint64_t value_ns);
void agg_workload_record_batch(struct agg *a, struct agg_proc *p, enum shm_family family,
			       const uint64_t *hist_counts, const uint64_t *prom_counts,
			       uint64_t count, uint64_t sum_ns, uint64_t max_ns);
uint32_t agg_workload_stage(struct agg *a, uint64_t now_ns);

/* agg_nccl.c, for agg.c and agg_publish.c */
int agg_nccl_init(struct agg *a);
void agg_nccl_destroy(struct agg *a);
void agg_nccl_proc_exit(struct agg *a, uint32_t pid);
uint32_t agg_nccl_stage(struct agg *a, uint64_t now_ns);

#endif /* ZERNEL_AGG_IMPL_H */
