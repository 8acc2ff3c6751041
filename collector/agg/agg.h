/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The collector's aggregation state: everything it will publish, fed by the
 * decoder (collector/probes/decode.h) with the records of either event source (the
 * BPF probes, or the simulator), by the launch histograms read from the
 * kernel (collector/probes/slot_hist.h) and by device totals, and written into
 * the segment by agg_publish().  Single-threaded: the collector's main loop owns
 * it.  Memory is bounded by the segment capacities; a row that does not fit
 * is refused and counted as an overflow of its table, never silently lost.
 *
 * Times are CLOCK_MONOTONIC nanoseconds (now_ns arguments).
 */
#ifndef ZERNEL_AGG_H
#define ZERNEL_AGG_H

#include <stddef.h>
#include <stdint.h>

#include "shm/shm_layout.h"
#include "shm/shm_writer.h"


struct agg_opts {
	struct shm_capacity cap;
	uint64_t window_ns;		/* summary window, LATENCY_DEFAULT_WINDOW_NS */
};

struct agg;

struct agg *agg_new(const struct agg_opts *opts);
void agg_free(struct agg *a);

/*
 * Processes.  agg_proc_watch adds a process (or ORs reason into an existing
 * one) and returns 0, or -ENOSPC when the table is full (counted).  Events
 * for a pid that is not watched are ignored and return -ENOENT.
 * agg_proc_exit evicts the process and its GPU memory rows at once.
 */
int agg_proc_watch(struct agg *a, uint32_t pid, uint32_t ppid, uint32_t reason,
		   const char *comm, uint64_t start_time_ns);
int agg_proc_is_watched(const struct agg *a, uint32_t pid);
/* pid's start time as known (0: unknown), or -ENOENT when it is not watched. */
int agg_proc_start_time(const struct agg *a, uint32_t pid, uint64_t *start_ns);
void agg_proc_exit(struct agg *a, uint32_t pid);
/*
 * Walks the watched processes, the collector's one watched set: start
 * with *cursor = 0; returns 1 with *pid set for each, 0 at the end.  The
 * process just returned may be evicted before the next call.
 */
int agg_proc_next(const struct agg *a, uint32_t *cursor, uint32_t *pid);

/*
 * Who a watched process is (struct shm_identity; its pid and reserved
 * fields are set here).  -ENOENT when pid is not watched.  The time it was
 * last set (now_ns), 0 when never or not watched, tells the caller when
 * to read it again.
 */
int agg_proc_set_identity(struct agg *a, uint32_t pid, const struct shm_identity *id,
			  uint64_t now_ns);
uint64_t agg_proc_identity_time(const struct agg *a, uint32_t pid);
/*
 * The identity last set and the digest of what it was parsed from
 * (agg_proc_set_identity_source; 0 when none was given): -ENOENT when
 * never set or not watched.
 */
int agg_proc_identity(const struct agg *a, uint32_t pid, struct shm_identity *out,
		      uint64_t *source);
void agg_proc_set_identity_source(struct agg *a, uint32_t pid, uint64_t source);

/*
 * One latency sample of a watched process; it also counts in the node-wide
 * series of its family (header.node) and in its workload's row
 * (agg_workload.c).
 */
int agg_latency(struct agg *a, uint32_t pid, enum shm_family family,
		uint64_t now_ns, uint64_t value_ns);

/*
 * A batch of samples of a watched process bucketed in the kernel (see
 * latency_record_batch for the arguments and the window's granularity);
 * it also counts in the node-wide series and its workload's row.
 * -ENOENT for an unwatched pid.
 */
int agg_latency_batch(struct agg *a, uint32_t pid, enum shm_family family, uint64_t now_ns,
		      const uint64_t *hist_counts, const uint64_t *prom_counts,
		      uint64_t count, uint64_t sum_ns, uint64_t max_ns);

/* ns more of a training thread of pid in state (enum shm_thread_state). */
int agg_thread_state(struct agg *a, uint32_t pid, enum shm_thread_state state, uint64_t ns);

/*
 * The states still open (collector/probes/sched/open_states.h): cleared before each
 * read, then a training thread of pid at a time, ns by state.  A process
 * is published with what has ended plus what is open, and never less than
 * at its last publish: a state that ends counts its whole length, at
 * least what was open of it.  -ENOENT for an unwatched pid.
 */
void agg_open_states_clear(struct agg *a);
int agg_open_state(struct agg *a, uint32_t pid, const uint64_t ns[SHM_STATE_COUNT]);

/* Scheduler counters: one context switch off CPU for off_ns; n of them for off_ns in all. */
int agg_offcpu(struct agg *a, uint32_t pid, uint64_t off_ns, int involuntary);
int agg_offcpu_batch(struct agg *a, uint32_t pid, uint64_t off_ns, uint64_t n, int involuntary);
int agg_migrations(struct agg *a, uint32_t pid, uint64_t n);	/* n moves to another CPU */

/*
 * GPU memory per (pid, gpu); frees never take used below zero.  gpu is the
 * physical GPU's index, or AGG_GPU_UNMAPPED | the process's CUDA ordinal
 * when its physical GPU is not known (published with gpu_id
 * SHM_GPU_UNKNOWN).  A row is created with cuda_device = gpu and gpu_map
 * "ordinal" unless agg_gpu_mapped said otherwise.
 */
#define AGG_GPU_UNMAPPED	0x80000000u
int agg_gpu_mapped(struct agg *a, uint32_t pid, uint32_t gpu, uint32_t cuda_device,
		   uint32_t gpu_map);
/*
 * Whether the probes made the (pid, gpu) row (a row of the driver's figure
 * alone is not theirs); and whether it was tracked from the process's start.
 */
int agg_gpu_has(const struct agg *a, uint32_t pid, uint32_t gpu);
int agg_gpu_from_start(struct agg *a, uint32_t pid, uint32_t gpu, int from_start);
int agg_gpu_alloc(struct agg *a, uint32_t pid, uint32_t gpu, uint64_t bytes);
int agg_gpu_free(struct agg *a, uint32_t pid, uint32_t gpu, uint64_t bytes);
/* Memory given back without a free call: a pool's, at a synchronisation or trim. */
int agg_gpu_released(struct agg *a, uint32_t pid, uint32_t gpu, uint64_t bytes);
int agg_gpu_alloc_failed(struct agg *a, uint32_t pid, uint32_t gpu);
/*
 * The driver's figures (NVML, read every few seconds: collector/gpu/nvml_poll.h;
 * collector/agg/agg_driver.c).  agg_gpu_device_used: a GPU's used memory as the
 * driver counts it, every process and context together, published as the
 * GPU's used_bytes (SHM_USED_DRIVER); known 0 gives it back to the sum of
 * the GPU's rows.  agg_gpu_driver_procs: the processes the driver lists on
 * a GPU with their used memory (AGG_DRIVER_NOT_AVAILABLE where it gives
 * none), or known 0 when the list could not be read.  Each row of the GPU
 * takes its process's listed figure or loses the one it had; a watched
 * process listed without a row on the GPU gets a row of the figure alone
 * (SHM_GPU_MEM_F_DRIVER_ROW), removed once the process is no longer listed;
 * a process listed twice (MIG instances of one GPU) gets the sum.
 * Processes that are not watched are left out.  Returns the number of rows
 * with a figure, or -EINVAL for an unmapped gpu.
 */
#define AGG_DRIVER_NOT_AVAILABLE	UINT64_MAX
struct agg_driver_proc {
	uint32_t pid;
	uint64_t used_bytes;		/* or AGG_DRIVER_NOT_AVAILABLE */
};
int agg_gpu_device_used(struct agg *a, uint32_t gpu, int known, uint64_t used_bytes);
int agg_gpu_driver_procs(struct agg *a, uint32_t gpu, const struct agg_driver_proc *procs,
			 size_t n, int known);
/* What NVML says a GPU is: UUID and model name (NULL: unchanged). */
int agg_gpu_identity(struct agg *a, uint32_t gpu, const char *uuid, const char *model_name);
/* Device total memory; source is SHM_TOTAL_*. */
int agg_gpu_total(struct agg *a, uint32_t gpu, uint64_t total_bytes, uint32_t source);

/* NCCL, all processes together per op. */
void agg_nccl_call(struct agg *a, enum shm_nccl_op_kind op, uint64_t bytes,
		   uint64_t duration_ns, int failed, uint64_t now_ns);
void agg_nccl_wait(struct agg *a, enum shm_nccl_op_kind op, uint64_t wait_ns,
		   uint64_t now_ns);

/*
 * NCCL communicators, one row per (pid, ncclComm_t handle): one rank each
 * (collector/agg/agg_nccl.c).  A communicator call that returned says how it
 * was made; its comm_id follows NCCL's commHash rules (nccl_hash.h).
 */
struct agg_comm_made {
	uint32_t origin;		/* enum shm_nccl_origin */
	uint64_t handle;		/* the new ncclComm_t; 0: a split that made none here */
	uint64_t parent;		/* split, shrink: the parent's ncclComm_t */
	uint64_t out;			/* split, shrink: where NCCL writes the child's handle */
	int32_t rank;			/* -1: not known (yet) */
	int32_t nranks;
	int32_t color;			/* split */
	uint32_t gpu;			/* UINT32_MAX: unknown */
	const uint8_t *id;		/* the 128-byte ncclUniqueId, or NULL when unreadable */
	int in_progress;		/* returned ncclInProgress: a non-blocking call */
	uint64_t ts_ns;			/* when the call returned */
};
/*
 * A non-blocking split or shrink returns ncclInProgress with no handle
 * (NCCL sets *newcomm when the child is complete): the child is bound to
 * the handle that libnccl's commAlloc gives with this parent, before or
 * after the return.  Where several of one parent's are in flight at once
 * (their async jobs run in any order), a child is bound at its first
 * call, to the split whose *newcomm (m->out) then holds its handle, read
 * through the reader agg_set_user_reader gave.
 */
int agg_nccl_comm_made(struct agg *a, uint32_t pid, const struct agg_comm_made *m);
/* NCCL's own rank and size of a communicator, and its parent (libnccl's commAlloc; 0: none). */
int agg_nccl_comm_size(struct agg *a, uint32_t pid, uint64_t handle, uint64_t parent,
		       int32_t rank, int32_t nranks);
/*
 * A call queued on a communicator at call_ns: counted, and a gap sample
 * when none was pending.  -ENOENT when the communicator is unknown.
 */
int agg_nccl_comm_call(struct agg *a, uint32_t pid, uint64_t handle, uint64_t bytes,
		       uint64_t call_ns);
/* A queued call completed (done_ns > 0: its wait is done_ns - start_ns) or was given up (0). */
void agg_nccl_comm_done(struct agg *a, uint32_t pid, uint64_t handle, uint64_t start_ns,
			uint64_t done_ns);
/* A queued call known complete by done_ns (its communicator's finalize), its wait unknown. */
void agg_nccl_comm_settled(struct agg *a, uint32_t pid, uint64_t handle, uint64_t done_ns);
/*
 * A collective's time on the GPU (Zernel's NCCL profiler plugin), on the
 * live communicator comm_id (NCCL's commHash) that rank of pid holds.
 * -ENOENT when pid holds no such communicator.
 */
int agg_nccl_comm_gpu(struct agg *a, uint32_t pid, uint64_t comm_id, int32_t rank, uint64_t ns,
		      uint64_t now_ns);
/*
 * The communicator (pid, handle) ended at ts_ns (ncclCommDestroy or
 * ncclCommAbort returned): its row keeps its figures and is published for
 * AGG_NCCL_END_GRACE_NS more, so that a scrape sees its last calls, then
 * goes; the handle is free for a new communicator, a row of its own.
 * Its pending calls must have been given up first (nccltrack_comm_end).
 * -ENOENT when the communicator is unknown.
 */
#define AGG_NCCL_END_GRACE_NS	(120ull * 1000000000ull)
int agg_nccl_comm_end(struct agg *a, uint32_t pid, uint64_t handle, uint64_t ts_ns);
/* When the live communicator (pid, handle) was made; 0 when none is. */
uint64_t agg_nccl_comm_made_at(struct agg *a, uint32_t pid, uint64_t handle);
/* Calls and waits that could not be followed, per reason (shm_stats.nccl_*). */
enum agg_nccl_loss {
	AGG_NCCL_ID_UNREADABLE = 0,
	AGG_NCCL_UNKNOWN_COMM,
	AGG_NCCL_BAD_ARGS,
	AGG_NCCL_CAPTURED,
	AGG_NCCL_PENDING_DROPPED,
	AGG_NCCL_PENDING_ENDED,
	AGG_NCCL_STATE_EVICTED,
};
void agg_nccl_count(struct agg *a, enum agg_nccl_loss why, uint64_t n);

/* Self-telemetry. */
void agg_count_events(struct agg *a, uint64_t n);
void agg_count_dropped(struct agg *a, uint64_t n);
/* The coverage check's figures (collector/probes/coverage.h). */
void agg_set_coverage(struct agg *a, uint64_t checked, uint64_t bypassed);
/* Parser children lost so far (collector/parser/parser.h). */
void agg_set_parser_restarts(struct agg *a, uint64_t restarts);
/*
 * How to read a watched process's word at addr (its own memory: root's
 * /proc/PID/mem, or a test's stand-in): 0 and *val, or -errno.  Unset,
 * concurrent splits of one parent stay unbound (their calls counted as on
 * an unknown communicator).
 */
void agg_set_user_reader(struct agg *a, int (*read_u64)(void *ctx, uint32_t pid, uint64_t addr,
							 uint64_t *val),
			 void *ctx);
void agg_set_probes(struct agg *a, uint64_t probes_attached, uint64_t libraries_attached,
		    uint64_t refused);

/*
 * Writes the whole state into the segment under the seqlock, stamping the
 * heartbeat with now_mono_ns / now_real_ns.  scenario may be NULL.
 */
void agg_publish(struct agg *a, struct shm_writer *w, uint64_t now_mono_ns,
		 uint64_t now_real_ns, const char *scenario);

#endif /* ZERNEL_AGG_H */
