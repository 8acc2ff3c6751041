/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Inside the collector's aggregation state: the types agg.c (the state),
 * agg_index.c (its fixed-capacity hash index) and agg_publish.c (copying it
 * into the segment) share.  Private to those three files.
 */
#ifndef ZERNEL_AGG_IMPL_H
#define ZERNEL_AGG_IMPL_H

#include <stdint.h>

#include "collector/agg.h"
#include "collector/latency.h"

/*
 * A fixed-capacity hash index from a 64-bit key to a slot in [0, cap):
 * chained through next[], with a free list, so removal is O(chain) and a
 * slot's rows in the parallel arrays stay put while it lives.
 */
struct agg_index {
	uint32_t cap;
	uint32_t used;
	uint32_t mask;			/* buckets - 1 */
	int32_t free_head;
	int32_t *head;			/* per bucket */
	int32_t *next;			/* per slot: chain, or free list */
	uint64_t *key;			/* per slot */
	uint8_t *live;			/* per slot */
};

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
};

struct agg_nccl {
	uint64_t calls;
	uint64_t bytes;
	uint64_t errors;
	struct latency_series duration;
	struct latency_series wait;
};

struct agg {
	struct agg_opts opts;
	int series_ready;		/* node and NCCL series initialised */

	struct agg_index proc_idx;
	struct agg_proc *procs;

	struct agg_index mem_idx;	/* key: pid << 32 | gpu */
	struct shm_gpu_mem *mem;

	/* GPUs and comms are few and change rarely: plain arrays. */
	struct shm_gpu *gpus;
	uint32_t n_gpus;
	struct shm_nccl_comm *comms;
	uint32_t n_comms;

	struct agg_nccl nccl[SHM_NCCL_OP_COUNT];
	struct latency_series node[SHM_FAMILY_COUNT];

	uint64_t overflows[SHM_TABLE_COUNT];
	struct shm_stats stats;

	/* Rows prepared outside the seqlock, then copied in one go. */
	struct shm_proc *stage_procs;
	struct shm_gpu_mem *stage_mem;
	struct shm_gpu *stage_gpus;
	struct shm_nccl_op stage_nccl[SHM_NCCL_OP_COUNT];
	struct shm_latency stage_node[SHM_FAMILY_COUNT];
	uint32_t published[SHM_TABLE_COUNT];	/* counts of the last publish */
};

int agg_index_init(struct agg_index *ix, uint32_t cap);
void agg_index_destroy(struct agg_index *ix);
/* The slot holding key, or -1. */
int32_t agg_index_find(const struct agg_index *ix, uint64_t key);
/* A new slot for key, or -1 when the index is full. */
int32_t agg_index_insert(struct agg_index *ix, uint64_t key);
void agg_index_remove(struct agg_index *ix, int32_t slot);

#endif /* ZERNEL_AGG_IMPL_H */
