/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The scheduler family (probe_family.h): where watched threads' time
 * goes.  Its programs (sched.bpf.c) see every context switch, wakeup,
 * migration and exit on the node, keep each watched thread's state and
 * add its switches up in its process's slot (bpf/slot_hist.h); they also
 * mark which threads train, from their CUDA and NCCL calls, and read a
 * stall's Python frames (bpf/pystack_walk.h).  How the program is set up
 * for this kernel is sched_config.c; the threads' states still open are
 * read by open_states.c.  Root.
 */
#include <errno.h>

#include "bpf/probe_abi.h"
#include "bpf/sched.skel.h"
#include "collector/probes/cuda_calls.h"
#include "collector/probes/decode.h"
#include "collector/probes/family_rows.h"

PROBE_SKELETON(sched)

/* What a thread is inside when it blocks, and which threads train. */
#define SCHED_MARK(lib, sym)		UPROBE(PROBE_OBJ_SCHED, lib, sym, "zs_cuda_launch")
#define SCHED_GPU(lib, sym, entry)	PAIR(PROBE_OBJ_SCHED, lib, sym, entry, "zs_cuda_ret")
#define SCHED_NCCL(sym)			PAIR(PROBE_OBJ_SCHED, NCCL, sym, "zs_nccl_call", "zs_nccl_ret")

/*
 * A thread's last state, counted only for a watched process: before
 * zw_exit, which takes the process out of the watched set at its last
 * thread (a tracepoint runs its programs in the order they were attached).
 */
static const struct probe_attach attach_first[] = {
	AUTO(PROBE_OBJ_SCHED, "zs_task_exit"),
};

static const struct probe_attach attach[] = {
	/*
	 * Scheduler: where threads' time goes, waits included (no syscall
	 * tracepoint); pthread_barrier_wait in each libc.
	 */
	AUTO(PROBE_OBJ_SCHED, "zs_wakeup"),		/* without sched_info only */
	AUTO(PROBE_OBJ_SCHED, "zs_wakeup_new"),
	AUTO(PROBE_OBJ_SCHED, "zs_switch"),		/* one of the two is loaded */
	AUTO(PROBE_OBJ_SCHED, "zs_switch_deferred"),
	AUTO(PROBE_OBJ_SCHED, "zs_migrate"),
	AUTO(PROBE_OBJ_SCHED, "zs_exec"),
	ITER(PROBE_OBJ_SCHED, "zs_open_states"),	/* read before each publish */
	PAIR(PROBE_OBJ_SCHED, LIBC, "pthread_barrier_wait", "zs_barrier_enter", "zs_barrier_exit"),

	/* Training threads: those that launch, allocate or synchronise. */
	CUDA_KERNEL_LAUNCHES(SCHED_MARK),
	CUDA_GRAPH_LAUNCHES(SCHED_MARK),
	/* Blocked inside these: gpu (collective for a sync that ends collectives). */
	SCHED_GPU(RT,  "cudaMalloc",			"zs_cuda_block"),
	SCHED_GPU(RT,  "cudaFree",			"zs_cuda_block"),
	SCHED_GPU(RT,  "cudaMemcpy",			"zs_cuda_block"),
	SCHED_GPU(DRV, "cuMemAlloc_v2",			"zs_cuda_block"),
	SCHED_GPU(DRV, "cuMemFree_v2",			"zs_cuda_block"),
	SCHED_GPU(DRV, "cuMemcpy",			"zs_cuda_block"),
	SCHED_GPU(DRV, "cuMemcpyDtoH_v2",		"zs_cuda_block"),
	SCHED_GPU(DRV, "cuMemcpyHtoD_v2",		"zs_cuda_block"),
	CUDA_STREAM_SYNCS(SCHED_GPU, "zs_cuda_sync"),
	CUDA_EVENT_SYNCS(SCHED_GPU, "zs_cuda_sync"),
	SCHED_NCCL("ncclAllReduce"),
	SCHED_NCCL("ncclAllGather"),
	SCHED_NCCL("ncclReduceScatter"),
	SCHED_NCCL("ncclBroadcast"),
	SCHED_NCCL("ncclBcast"),
	SCHED_NCCL("ncclReduce"),
	SCHED_NCCL("ncclSend"),
	SCHED_NCCL("ncclRecv"),
	SCHED_NCCL("ncclAlltoAll"),
	SCHED_NCCL("ncclGather"),
	SCHED_NCCL("ncclScatter"),
	SCHED_NCCL("ncclGroupEnd"),
};

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

static const struct probe_decoder decoders[] = {
	DECODER(ZEV_SCHED_SWITCH,	zev_sched_switch,	dec_sched_switch),
	DECODER(ZEV_SCHED_MIGRATE,	zev_sched_migrate,	dec_sched_migrate),
	DECODER(ZEV_THREAD_EXIT,	zev_thread_exit,	dec_thread_exit),
};

const struct probe_family sched_family = {
	.object = PROBE_OBJECT(sched, sched_configure, sched_fallback),
	.attach_first = PROBE_ROWS(attach_first),
	.attach = PROBE_ROWS(attach),
	.decoders = PROBE_ROWS(decoders),
};
