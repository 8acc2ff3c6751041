/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The decoder: the one path from probe records (bpf/probe_abi.h) to the
 * aggregation.  The BPF ring buffer feeds it (decode_ringbuf as the
 * callback) and so does the simulator, with the same records.  One table
 * says, per record type, its size and its handler; a record whose size
 * does not match its type is refused before any field is read.
 *
 * It holds what each family's decoders keep across records (the live GPU
 * allocations, so that a free subtracts what was allocated; the NCCL calls
 * waiting for a synchronisation of their streams), made, aged and freed
 * through the family's hooks (probe_family.h).
 * What it cannot do itself belongs to the event source and is asked of it
 * through decode_ops: forget the kernel's state of a process that is gone
 * (before the aggregation forgets the process), and probe a process's
 * libc.  The simulator leaves them NULL.  Collector-internal.
 */
#ifndef ZERNEL_DECODE_H
#define ZERNEL_DECODE_H

#include <stddef.h>
#include <stdint.h>

#include "collector/agg/agg.h"
#include "collector/probes/families.h"

struct stall_where;
struct zev_py_stall;

struct decode_ops {
	/*
	 * pid is gone: flush and drop what the source keeps for it.  start_ns:
	 * its start_boottime to the nanosecond (0: not known).
	 */
	void (*proc_exit)(void *ctx, uint32_t pid, uint64_t start_ns);
	/* pid asks for pthread_barrier_wait to be probed in its libc. */
	void (*libc_probe)(void *ctx, uint32_t pid);
	/* pid's loader changed its libraries: look at its maps. */
	void (*lib_loaded)(void *ctx, uint32_t pid);
	/* Names a Python stall's site from the process; 0, or -errno when it cannot. */
	int (*py_where)(void *ctx, const struct zev_py_stall *rec, struct stall_where *out);
	/*
	 * The physical GPU of pid's CUDA device ordinal: returns an enum
	 * shm_gpu_map and sets *gpu_id (SHM_GPU_UNKNOWN when not known).
	 * NULL: ordinals are published as they are (gpu_map "ordinal").
	 */
	uint32_t (*gpu_of)(void *ctx, uint32_t pid, uint32_t ordinal, uint32_t *gpu_id);
	/*
	 * pid is a new program (exec) or a new process (its pid reused, the
	 * exit missed) while still watched: drop what the source keeps for
	 * the old one, but keep watching.
	 */
	void (*proc_reset)(void *ctx, uint32_t pid);
	/*
	 * 1 when every library pid calls the driver through was probed before
	 * it started (asked once per new (pid, GPU) row).  NULL: always.
	 */
	int (*from_start)(void *ctx, uint32_t pid);
	void *ctx;
};

struct decode {
	struct agg *agg;
	void *state[PROBE_OBJ_COUNT];	/* each family's, by enum probe_obj (NULL: none) */
	uint64_t next_expire_ns;
	struct decode_ops ops;
	uint64_t events;		/* records decoded */
	uint64_t refused;		/* unknown types, wrong sizes */
};

/* What family f's decoders keep (NULL: nothing). */
static inline void *decode_state(const struct decode *d, enum probe_obj f)
{
	return d->state[f];
}

/*
 * ops may be NULL.  Returns 0, -ENOMEM, or -EEXIST when two probe
 * families claim one record type (logged).
 */
int decode_init(struct decode *d, struct agg *agg, const struct decode_ops *ops);
void decode_destroy(struct decode *d);

/*
 * Feeds one record of size bytes to the aggregation, counting it as an
 * event.  Returns 0, or -EINVAL when the record was refused.
 */
int decode_event(struct decode *d, const void *rec, size_t size);

/* decode_event as a ring_buffer_sample_fn (ctx is the struct decode). */
int decode_ringbuf(void *ctx, void *data, size_t size);

/*
 * A watched process is gone (its exit record, or found gone by the
 * loader's sweep): its live allocations are forgotten and the aggregation
 * evicts it.  The source's own state is the caller's.
 */
void decode_proc_gone(struct decode *d, uint32_t pid);

/*
 * A process is watched (a probe's record, or a /proc scan), for reasons,
 * with its start time (0: unknown).  An exec (is_exec), or a start time
 * other than the one known (a reused pid whose exit went unseen), starts a
 * fresh process: its old rows, live allocations and the source's state go
 * first, so nothing of the old one is counted for, or subtracted from, the
 * new one.
 */
void decode_proc_seen(struct decode *d, uint32_t pid, uint32_t ppid, uint32_t reasons,
		      const char *comm, uint64_t start_ns, int is_exec);

#endif /* ZERNEL_DECODE_H */
