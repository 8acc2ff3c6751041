/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Probe records to aggregation calls (see decode.h): one handler per
 * record type, found through one table that also holds each record's size.
 * Records come from our own BPF programs or the simulator, but their sizes
 * and enums are still checked before use.  Runs in the collector's main
 * loop.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "bpf/probe_abi.h"
#include "collector/agg/agg_stall.h"
#include "collector/agg/agg_trace.h"
#include "collector/agg/mempool.h"
#include "collector/agg/memtrack.h"
#include "collector/agg/nccl_hash.h"
#include "collector/nccl/nccl_track.h"
#include "collector/probes/decode.h"
#include "common/log.h"

_Static_assert(ZEV_GPU_UNKNOWN == UINT32_MAX, "unknown device as shm_nccl_comm has it");
_Static_assert(SHM_COMM_LEN == 16, "the kernel's TASK_COMM_LEN");
_Static_assert(ZN_ID_BYTES == NCCL_HASH_ID_BYTES, "one ncclUniqueId size");

static int dec_watch(struct decode *d, const void *rec)
{
	const struct zev_watch *e = rec;
	char comm[SHM_COMM_LEN + 1];

	memcpy(comm, e->comm, SHM_COMM_LEN);
	comm[SHM_COMM_LEN] = '\0';
	decode_proc_seen(d, e->hdr.pid, e->ppid, e->reasons & SHM_WATCH_ALL_BITS, comm, e->start_ns,
			 (e->reasons & ZEV_WATCH_F_EXEC) != 0);
	return 0;
}

void decode_proc_seen(struct decode *d, uint32_t pid, uint32_t ppid, uint32_t reasons,
		      const char *comm, uint64_t start_ns, int is_exec)
{
	uint64_t known = 0;
	int watched = agg_proc_start_time(d->agg, pid, &known) == 0;

	if (watched && (is_exec || (start_ns && known && known != start_ns))) {
		if (d->ops.proc_reset)
			d->ops.proc_reset(d->ops.ctx, pid);
		decode_proc_gone(d, pid);
	}
	/* A full table is counted by the aggregation. */
	agg_proc_watch(d->agg, pid, ppid, reasons, comm, start_ns);
}

static int dec_exit(struct decode *d, const void *rec)
{
	const struct zev_exit *e = rec;
	uint64_t known = 0;

	/*
	 * The exit of an earlier process under a pid that /proc showed
	 * watched again before this record was read: not the one watched now.
	 */
	if (e->start_ns && agg_proc_start_time(d->agg, e->hdr.pid, &known) == 0 && known &&
	    !ZW_SAME_START(known, e->start_ns))
		return 0;
	if (d->ops.proc_exit)
		d->ops.proc_exit(d->ops.ctx, e->hdr.pid, e->start_ns);
	decode_proc_gone(d, e->hdr.pid);
	return 0;
}

/*
 * The aggregation's key of pid's CUDA device ordinal: the physical GPU, or
 * the ordinal marked unmapped; the row is told how.  Allocations keep the
 * key, so a free lands where its allocation did.
 */
static uint32_t gpu_key(struct decode *d, uint32_t pid, uint32_t ordinal)
{
	uint32_t gpu = ordinal, how = SHM_GPU_MAP_ORDINAL;

	if (d->ops.gpu_of) {
		how = d->ops.gpu_of(d->ops.ctx, pid, ordinal, &gpu);
		if (!shm_gpu_map_resolved(how) || gpu & AGG_GPU_UNMAPPED)
			gpu = AGG_GPU_UNMAPPED | (ordinal & ~AGG_GPU_UNMAPPED);
	}
	if (d->ops.from_start && !agg_gpu_has(d->agg, pid, gpu))
		agg_gpu_from_start(d->agg, pid, gpu, d->ops.from_start(d->ops.ctx, pid));
	if (how != SHM_GPU_MAP_ORDINAL || gpu != ordinal)
		agg_gpu_mapped(d->agg, pid, gpu, ordinal, how);
	return gpu;
}

/* Memory a pool gave back to the driver: the process holds less. */
static void pool_released(void *ctx, uint32_t pid, uint32_t gpu, uint64_t bytes)
{
	struct decode *d = ctx;

	agg_gpu_released(d->agg, pid, gpu, bytes);
}

/* What an allocation made the process hold: its bytes, or what its pool had to reserve. */
static uint64_t mem_taken(struct decode *d, const struct zev_mem_alloc *e,
			  struct memtrack_alloc *a)
{
	uint64_t grown;

	if (!e->pooled || e->space != ZMEM_SPACE_PTR)
		return a->bytes;
	if (mempool_alloc(d->pools, e->hdr.pid, (int32_t)e->gpu, a->gpu, e->pool, a->bytes,
			  &grown, &a->pool) < 0)
		agg_count_dropped(d->agg, 1);	/* counted as if not pooled */
	return grown;
}

/* An allocation's memory went back: to the driver, or to its pool, which keeps it. */
static void mem_given_back(struct decode *d, uint32_t pid, const struct memtrack_alloc *a)
{
	if (a->pool) {
		mempool_freed(d->pools, pid, a->pool, a->bytes, pool_released, d);
		agg_gpu_free(d->agg, pid, a->gpu, 0);
	} else {
		agg_gpu_free(d->agg, pid, a->gpu, a->bytes);
	}
}

static int dec_mem_alloc(struct decode *d, const void *rec)
{
	const struct zev_mem_alloc *e = rec;
	struct memtrack_alloc a = { .bytes = e->bytes }, old;
	uint64_t taken;

	if (e->space > ZMEM_SPACE_VMM || e->pooled > 1)
		return -EINVAL;
	a.gpu = gpu_key(d, e->hdr.pid, e->gpu);
	/* Its address was live: its free went unseen (an unprobed path), it is gone now. */
	if (memtrack_take(d->mem, e->hdr.pid, e->space, e->addr, &old) == 0)
		mem_given_back(d, e->hdr.pid, &old);
	taken = mem_taken(d, e, &a);
	/* Untracked: counted, but its free will not subtract (nor go back to its pool). */
	if (memtrack_add(d->mem, e->hdr.pid, e->space, e->addr, &a, &old) < 0)
		agg_count_dropped(d->agg, 1);
	agg_gpu_alloc(d->agg, e->hdr.pid, a.gpu, taken);
	return 0;
}

static int dec_mem_free(struct decode *d, const void *rec)
{
	const struct zev_mem_free *e = rec;
	struct memtrack_alloc a;

	if (e->space > ZMEM_SPACE_VMM)
		return -EINVAL;
	/* A pointer we never saw allocated (before we started): nothing to do. */
	if (memtrack_take(d->mem, e->hdr.pid, e->space, e->addr, &a) != 0)
		return 0;
	mem_given_back(d, e->hdr.pid, &a);
	return 0;
}

static int dec_mem_pool(struct decode *d, const void *rec)
{
	const struct zev_mem_pool *e = rec;

	if (e->op >= ZMEM_POOL_OP_COUNT)
		return -EINVAL;
	if (mempool_named(d->pools, e->hdr.pid, e->op, e->dev, e->pool, e->bytes,
			  pool_released, d) == -ENOSPC)
		agg_count_dropped(d->agg, 1);
	return 0;
}

static int dec_mem_fail(struct decode *d, const void *rec)
{
	const struct zev_mem_fail *e = rec;

	agg_gpu_alloc_failed(d->agg, e->hdr.pid, gpu_key(d, e->hdr.pid, e->gpu));
	return 0;
}

static int dec_latency(struct decode *d, const void *rec)
{
	const struct zev_latency *e = rec;

	if (e->family >= SHM_FAMILY_COUNT)
		return -EINVAL;
	agg_latency(d->agg, e->hdr.pid, (enum shm_family)e->family, e->hdr.ts_ns, e->ns);
	return 0;
}

#define NCCL_IN_PROGRESS	7	/* ncclInProgress: queued by a non-blocking communicator */

static int dec_nccl_call(struct decode *d, const void *rec)
{
	const struct zev_nccl_call *e = rec;
	int queued = e->ret == 0 || e->ret == NCCL_IN_PROGRESS;

	if (e->op >= SHM_NCCL_OP_COUNT)
		return -EINVAL;
	if (e->flags & (ZN_CALL_BAD_DTYPE | ZN_CALL_BAD_COUNT))
		agg_nccl_count(d->agg, AGG_NCCL_BAD_ARGS, 1);
	agg_nccl_call(d->agg, (enum shm_nccl_op_kind)e->op, e->bytes, e->ns, !queued,
		      e->hdr.ts_ns);
	agg_trace(d->agg, e->hdr.pid, e->hdr.tid, SHM_TRACE_NCCL_CALL, e->op, e->hdr.ts_ns, e->ns,
		  NULL);
	if (queued && agg_proc_is_watched(d->agg, e->hdr.pid))
		nccltrack_call(d->nccl, e);
	return 0;
}

static int dec_nccl_wait(struct decode *d, const void *rec)
{
	const struct zev_nccl_wait *e = rec;

	if (e->op >= SHM_NCCL_OP_COUNT)
		return -EINVAL;
	agg_nccl_wait(d->agg, (enum shm_nccl_op_kind)e->op, e->ns, e->hdr.ts_ns);
	agg_collective_wait(d->agg, e->hdr.pid, e->ns);
	agg_trace(d->agg, e->hdr.pid, e->hdr.tid, SHM_TRACE_NCCL_WAIT, e->op, e->hdr.ts_ns, e->ns,
		  NULL);
	return 0;
}

static int dec_nccl_comm(struct decode *d, const void *rec)
{
	const struct zev_nccl_comm *e = rec;
	struct agg_comm_made m = {
		.origin = e->origin, .handle = e->comm, .parent = e->parent, .out = e->out,
		.rank = e->rank,
		.nranks = e->nranks, .color = e->color, .gpu = e->gpu,
		.id = e->id_ok ? e->id : NULL, .in_progress = e->ret == NCCL_IN_PROGRESS,
		.ts_ns = e->hdr.ts_ns,
	};

	if (e->origin >= SHM_NCCL_ORIGIN_COUNT)
		return -EINVAL;
	/*
	 * NCCL hands out a live communicator's address to no other, so one
	 * made where a live one was means that one's memory was freed: its
	 * destroy or abort, on another thread, has not returned yet.  It ends
	 * here, its pending calls given up; its end, when it comes, is older
	 * than this one and is passed over (dec_nccl_end).
	 */
	if (e->comm && agg_nccl_comm_made_at(d->agg, e->hdr.pid, e->comm)) {
		nccltrack_comm_end(d->nccl, e->hdr.pid, e->comm, 0);
		agg_nccl_comm_end(d->agg, e->hdr.pid, e->comm, e->hdr.ts_ns);
	}
	/* The communicator's physical GPU, when its ordinal maps to one. */
	if (m.gpu != ZEV_GPU_UNKNOWN && d->ops.gpu_of &&
	    !shm_gpu_map_resolved(d->ops.gpu_of(d->ops.ctx, e->hdr.pid, e->gpu, &m.gpu)))
		m.gpu = ZEV_GPU_UNKNOWN;
	agg_nccl_comm_made(d->agg, e->hdr.pid, &m);
	return 0;
}

static int dec_nccl_alloc(struct decode *d, const void *rec)
{
	const struct zev_nccl_alloc *e = rec;

	agg_nccl_comm_size(d->agg, e->hdr.pid, e->comm, e->parent, e->rank, e->nranks);
	return 0;
}

/*
 * A communicator ended: its queued calls settled first (nccltrack), then,
 * destroyed or aborted, its row ends and its handle is free for another.
 */
/* GPU time beyond this is no collective's: the record is refused. */
#define DECODE_MAX_GPU_NS	(24ull * 3600 * 1000000000ull)

static int dec_nccl_gpu(struct decode *d, const void *rec)
{
	const struct zev_nccl_gpu *e = rec;
	const struct zernel_nccl_gpu_span *s = &e->span;

	if (s->op > SHM_NCCL_OP_COUNT || s->rank < 0 || s->gpu_ns > DECODE_MAX_GPU_NS)
		return -EINVAL;
	if (agg_nccl_comm_gpu(d->agg, e->hdr.pid, s->comm_hash, s->rank, s->gpu_ns,
			      e->hdr.ts_ns) == -ENOENT)
		agg_nccl_count(d->agg, AGG_NCCL_UNKNOWN_COMM, 1);
	return 0;
}

static int dec_nccl_end(struct decode *d, const void *rec)
{
	const struct zev_nccl_end *e = rec;

	if (e->how >= ZN_END_KIND_COUNT)
		return -EINVAL;
	if (e->ret != 0 && (e->ret != NCCL_IN_PROGRESS || e->how == ZN_END_FINALIZE))
		return 0;
	/* Its handle holds a communicator made since it was entered: that one was ended then. */
	if (agg_nccl_comm_made_at(d->agg, e->hdr.pid, e->comm) > e->hdr.ts_ns - e->ns)
		return 0;
	/*
	 * A finalize that returned has flushed the communicator's work, and so
	 * has a destroy (which finalizes one not finalized yet); an abort, or
	 * a destroy still in progress, leaves it unknown.
	 */
	nccltrack_comm_end(d->nccl, e->hdr.pid, e->comm,
			   e->how != ZN_END_ABORT && e->ret == 0 ? e->hdr.ts_ns : 0);
	if (e->how != ZN_END_FINALIZE)
		agg_nccl_comm_end(d->agg, e->hdr.pid, e->comm, e->hdr.ts_ns);
	return 0;
}

static int dec_nccl_group(struct decode *d, const void *rec)
{
	nccltrack_group(d->nccl, rec);
	return 0;
}

static int dec_cuda_sync(struct decode *d, const void *rec)
{
	const struct zev_cuda_sync *e = rec;

	if (e->kind >= ZN_SYNC_KIND_COUNT)
		return -EINVAL;
	if (e->kind == ZN_SYNC_STREAM || e->kind == ZN_SYNC_EVENT || e->kind == ZN_SYNC_DEVICE)
		mempool_sync(d->pools, e->hdr.pid, pool_released, d);
	nccltrack_sync(d->nccl, e);
	return 0;
}

static int dec_cuda_order(struct decode *d, const void *rec)
{
	const struct zev_cuda_order *e = rec;

	if (e->kind >= ZN_ORDER_KIND_COUNT)
		return -EINVAL;
	nccltrack_order(d->nccl, e);
	return 0;
}

/* A stint on the CPU: running its own code, or inside CUDA or NCCL calls. */
static void oncpu_states(struct decode *d, uint32_t pid, uint64_t oncpu, uint64_t gpu,
			 uint64_t coll)
{
	agg_thread_state(d->agg, pid, SHM_STATE_ONCPU, oncpu);
	if (gpu)
		agg_thread_state(d->agg, pid, SHM_STATE_GPU, gpu);
	if (coll)
		agg_thread_state(d->agg, pid, SHM_STATE_COLLECTIVE, coll);
}

/*
 * One context switch, counted once its off-CPU time is known; its thread
 * states when it is a training thread; a futex wait when it blocked in one.
 */
static int dec_sched_switch(struct decode *d, const void *rec)
{
	const struct zev_sched_switch *e = rec;
	uint32_t pid = e->hdr.pid;

	if ((e->flags & ZS_SW_BLOCKED) &&
	    (e->blocked_state >= SHM_STATE_COUNT || e->blocked_state <= SHM_STATE_RUNQ))
		return -EINVAL;
	if (e->flags & ZS_SW_OFFCPU)
		agg_offcpu(d->agg, pid, e->offcpu_ns, (e->flags & ZS_SW_INVOLUNTARY) != 0);
	if (e->flags & ZS_SW_RUNQ)
		agg_latency(d->agg, pid, SHM_FAMILY_RUNQ_DELAY, e->hdr.ts_ns, e->runq_ns);
	if ((e->flags & (ZS_SW_BLOCKED | ZS_SW_FUTEX)) == (ZS_SW_BLOCKED | ZS_SW_FUTEX))
		agg_latency(d->agg, pid, SHM_FAMILY_FUTEX_WAIT, e->hdr.ts_ns, e->blocked_ns);
	if (!(e->flags & ZS_SW_TRAINING))
		return 0;
	if (e->flags & ZS_SW_ONCPU)
		oncpu_states(d, pid, e->oncpu_ns, e->gpu_ns, e->coll_ns);
	if (e->flags & ZS_SW_BLOCKED)
		agg_thread_state(d->agg, pid, (enum shm_thread_state)e->blocked_state,
				 e->blocked_ns);
	if (e->flags & ZS_SW_RUNQ)
		agg_thread_state(d->agg, pid, SHM_STATE_RUNQ, e->runq_ns);
	return 0;
}

/* A thread's last time on a CPU, before it exited. */
static int dec_thread_exit(struct decode *d, const void *rec)
{
	const struct zev_thread_exit *e = rec;

	if ((e->flags & (ZS_SW_TRAINING | ZS_SW_ONCPU)) == (ZS_SW_TRAINING | ZS_SW_ONCPU))
		oncpu_states(d, e->hdr.pid, e->oncpu_ns, e->gpu_ns, e->coll_ns);
	return 0;
}

static int dec_sched_migrate(struct decode *d, const void *rec)
{
	const struct zev_sched_migrate *e = rec;

	agg_migrations(d->agg, e->hdr.pid, 1);
	return 0;
}

static int dec_libc_probe(struct decode *d, const void *rec)
{
	const struct zev_libc_probe *e = rec;

	if (d->ops.libc_probe)
		d->ops.libc_probe(d->ops.ctx, e->hdr.pid);
	return 0;
}

static int dec_lib_loaded(struct decode *d, const void *rec)
{
	const struct zev_lib_loaded *e = rec;

	if (d->ops.lib_loaded)
		d->ops.lib_loaded(d->ops.ctx, e->hdr.pid);
	return 0;
}

/* "file:line in function", the end of the path kept when it is too long. */
static void site_name(const struct stall_frame *f, char *out, size_t len)
{
	char tail[SHM_TRACE_NAME_LEN / 2];
	size_t n = strnlen(f->file, sizeof(f->file));
	const char *file = f->file;

	if (n >= sizeof(tail))
		file += n - (sizeof(tail) - 1);
	memcpy(tail, file, strnlen(file, sizeof(tail) - 1));
	tail[strnlen(file, sizeof(tail) - 1)] = '\0';
	snprintf(out, len, "%s:%u in %.40s", tail, f->line, f->func);
}

/*
 * A Python stall: named by the event source (it alone can read the
 * process), counted without a site when it cannot be; the stalls the
 * kernel held back over the rate bound come with it, time included.
 */
static int dec_py_stall(struct decode *d, const void *rec)
{
	const struct zev_py_stall *e = rec;
	struct stall_where where;
	uint64_t span;
	int named;

	if (e->state >= SHM_STALL_STATE_COUNT || e->nframes > ZP_MAX_FRAMES)
		return -EINVAL;
	/* The trace draws a spinning synchronisation from its entry to its return. */
	span = e->span_ns > e->ns ? e->span_ns : e->ns;
	if (e->skipped)
		agg_stall_unsampled(d->agg, e->hdr.pid, e->skipped, e->skipped_ns);
	named = d->ops.py_where && d->ops.py_where(d->ops.ctx, e, &where) == 0;
	if (named) {
		char name[SHM_TRACE_NAME_LEN];

		site_name(&where.site, name, sizeof(name));
		agg_trace(d->agg, e->hdr.pid, e->hdr.tid, SHM_TRACE_STALL, e->state, e->hdr.ts_ns,
			  span, name);
	} else {
		agg_trace(d->agg, e->hdr.pid, e->hdr.tid, SHM_TRACE_STALL, e->state, e->hdr.ts_ns,
			  span, NULL);
	}
	agg_stall(d->agg, e->hdr.pid, e->hdr.tid, e->state, e->ns, e->hdr.ts_ns,
		  named ? &where : NULL);
	return 0;
}

static const struct {
	size_t size;
	int (*handle)(struct decode *d, const void *rec);
} decoders[ZEV_TYPE_COUNT] = {
	[ZEV_WATCH]		= { sizeof(struct zev_watch), dec_watch },
	[ZEV_EXIT]		= { sizeof(struct zev_exit), dec_exit },
	[ZEV_MEM_ALLOC]		= { sizeof(struct zev_mem_alloc), dec_mem_alloc },
	[ZEV_MEM_FREE]		= { sizeof(struct zev_mem_free), dec_mem_free },
	[ZEV_MEM_FAIL]		= { sizeof(struct zev_mem_fail), dec_mem_fail },
	[ZEV_LATENCY]		= { sizeof(struct zev_latency), dec_latency },
	[ZEV_NCCL_CALL]		= { sizeof(struct zev_nccl_call), dec_nccl_call },
	[ZEV_NCCL_WAIT]		= { sizeof(struct zev_nccl_wait), dec_nccl_wait },
	[ZEV_NCCL_COMM]		= { sizeof(struct zev_nccl_comm), dec_nccl_comm },
	[ZEV_SCHED_SWITCH]	= { sizeof(struct zev_sched_switch), dec_sched_switch },
	[ZEV_SCHED_MIGRATE]	= { sizeof(struct zev_sched_migrate), dec_sched_migrate },
	[ZEV_LIBC_PROBE]	= { sizeof(struct zev_libc_probe), dec_libc_probe },
	[ZEV_PY_STALL]		= { sizeof(struct zev_py_stall), dec_py_stall },
	[ZEV_NCCL_ALLOC]	= { sizeof(struct zev_nccl_alloc), dec_nccl_alloc },
	[ZEV_NCCL_GROUP]	= { sizeof(struct zev_nccl_group), dec_nccl_group },
	[ZEV_CUDA_SYNC]		= { sizeof(struct zev_cuda_sync), dec_cuda_sync },
	[ZEV_CUDA_ORDER]	= { sizeof(struct zev_cuda_order), dec_cuda_order },
	[ZEV_THREAD_EXIT]	= { sizeof(struct zev_thread_exit), dec_thread_exit },
	[ZEV_LIB_LOADED]	= { sizeof(struct zev_lib_loaded), dec_lib_loaded },
	[ZEV_NCCL_END]		= { sizeof(struct zev_nccl_end), dec_nccl_end },
	[ZEV_MEM_POOL]		= { sizeof(struct zev_mem_pool), dec_mem_pool },
	[ZEV_NCCL_GPU]		= { sizeof(struct zev_nccl_gpu), dec_nccl_gpu },
};

int decode_init(struct decode *d, struct agg *agg, const struct decode_ops *ops)
{
	memset(d, 0, sizeof(*d));
	d->agg = agg;
	if (ops)
		d->ops = *ops;
	d->mem = memtrack_new(DECODE_MAX_ALLOCS);
	d->pools = mempool_new(DECODE_MAX_POOLS);
	d->nccl = nccltrack_new(agg);
	return d->mem && d->pools && d->nccl ? 0 : -ENOMEM;
}

void decode_destroy(struct decode *d)
{
	memtrack_free(d->mem);
	mempool_free(d->pools);
	nccltrack_free(d->nccl);
	memset(d, 0, sizeof(*d));
}

int decode_event(struct decode *d, const void *rec, size_t size)
{
	const struct zev_hdr *h = rec;
	uint32_t type;

	if (size < sizeof(*h)) {
		type = 0;
		goto refuse;
	}
	type = h->type;
	if (type >= ZEV_TYPE_COUNT || !decoders[type].handle || size != decoders[type].size)
		goto refuse;
	d->events++;
	agg_count_events(d->agg, 1);
	if (h->ts_ns >= d->next_expire_ns) {
		/* Once a second of event time: stream and event state long unused. */
		nccltrack_expire(d->nccl, h->ts_ns);
		d->next_expire_ns = h->ts_ns + 1000000000ull;
	}
	return decoders[type].handle(d, rec);

refuse:
	/* Our own programs sent it: once is enough to say the two disagree. */
	if (d->refused++ == 0)
		log_warnx("probe record of type %u and %zu bytes refused (ABI mismatch?)", type, size);
	return -EINVAL;
}

int decode_ringbuf(void *ctx, void *data, size_t size)
{
	decode_event(ctx, data, size);
	/* Never stop the drain: a refused record is counted and skipped. */
	return 0;
}

void decode_proc_gone(struct decode *d, uint32_t pid)
{
	memtrack_evict_pid(d->mem, pid);
	mempool_evict_pid(d->pools, pid);
	nccltrack_proc_gone(d->nccl, pid);
	agg_proc_exit(d->agg, pid);
}
