/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The NCCL family (probe_family.h): collectives, point-to-point calls and
 * communicators, and the CUDA calls that order streams or end a wait.
 * Its programs (nccl.bpf.c) time each call and read its arguments
 * (bpf/nccl_args.h); its records make the communicators' rows and the
 * per-op figures, and feed the stream tracking (nccl_track.h) that tells
 * when a queued collective completed.  Root.
 */
#include <errno.h>

#include "bpf/nccl.skel.h"
#include "bpf/nccl_gpu_span.h"
#include "bpf/probe_abi.h"
#include "collector/agg/agg_stall.h"
#include "collector/agg/agg_trace.h"
#include "collector/agg/nccl_hash.h"
#include "collector/probes/decode.h"
#include "collector/probes/family_rows.h"
#include "collector/probes/gpu_mem/gpu_mem.h"
#include "collector/probes/nccl/nccl_track.h"

_Static_assert(ZEV_GPU_UNKNOWN == UINT32_MAX, "unknown device as shm_nccl_comm has it");
_Static_assert(ZN_ID_BYTES == NCCL_HASH_ID_BYTES, "one ncclUniqueId size");

PROBE_SKELETON(nccl)

/* The stream tracking: NCCL calls waiting for a synchronisation of their streams. */
static struct nccltrack *tracker(const struct decode *d)
{
	return decode_state(d, PROBE_OBJ_NCCL);
}

static void *state_new(struct agg *agg)
{
	return nccltrack_new(agg);
}

static void state_free(void *state)
{
	nccltrack_free(state);
}

static void proc_gone(void *state, uint32_t pid)
{
	nccltrack_proc_gone(state, pid);
}

/* Stream and event state long unused. */
static void expire(void *state, uint64_t now_ns)
{
	nccltrack_expire(state, now_ns);
}

/* NCCL's calls, by what their return program records: a call, a communicator made or ended. */
#define COLL(sym, entry)	PAIR(PROBE_OBJ_NCCL, NCCL, sym, entry, "zn_coll_ret")
#define COMM_INIT(sym, entry)	PAIR(PROBE_OBJ_NCCL, NCCL, sym, entry, "zn_init_ret")
#define COMM_END(sym, entry)	PAIR(PROBE_OBJ_NCCL, NCCL, sym, entry, "zn_end_ret")
#define CUDA(lib, sym, entry)	PAIR(PROBE_OBJ_NCCL, lib, sym, entry, "zn_cuda_ret")

static const struct probe_attach attach[] = {
	/*
	 * NCCL: collectives, point-to-point, groups, communicators made and
	 * ended (commAlloc: libnccl's internal symbol, where NCCL settles a
	 * split child's rank),
	 * then the CUDA calls that order streams or end a wait.
	 */
	COLL("ncclAllReduce",			"zn_all_reduce"),
	COLL("ncclAllGather",			"zn_all_gather"),
	COLL("ncclReduceScatter",		"zn_reduce_scatter"),
	COLL("ncclBroadcast",			"zn_broadcast"),
	COLL("ncclBcast",			"zn_bcast"),
	COLL("ncclReduce",			"zn_reduce"),
	COLL("ncclSend",			"zn_send"),
	COLL("ncclRecv",			"zn_recv"),
	COLL("ncclAlltoAll",			"zn_all_to_all"),
	COLL("ncclGather",			"zn_gather"),
	COLL("ncclScatter",			"zn_scatter"),
	UPROBE(PROBE_OBJ_NCCL, NCCL, "ncclGroupStart", "zn_group_start"),
	COLL("ncclGroupEnd",			"zn_group_end"),
	COMM_INIT("ncclCommInitRank",		"zn_init_rank"),
	COMM_INIT("ncclCommInitRankConfig",	"zn_init_rank"),
	COMM_INIT("ncclCommInitRankScalable",	"zn_init_scalable"),
	COMM_INIT("ncclCommInitAll",		"zn_init_all"),
	COMM_INIT("ncclCommSplit",		"zn_split"),
	COMM_INIT("ncclCommShrink",		"zn_shrink"),
	COMM_END("ncclCommFinalize",		"zn_finalize"),
	COMM_END("ncclCommDestroy",		"zn_destroy"),
	COMM_END("ncclCommAbort",		"zn_abort"),
	UPROBE(PROBE_OBJ_NCCL, NCCL, "_ZL9commAllocP8ncclCommS0_ii", "zn_comm_alloc"),
	/* Each collective's GPU time, where NCCL loaded Zernel's profiler plugin. */
	UPROBE(PROBE_OBJ_NCCL, PROF, ZERNEL_NCCL_GPU_SPAN_FN, "zn_gpu_span"),
	WITH_PTSZ(CUDA, RT,  "cudaStreamSynchronize",	"zn_stream_sync"),
	WITH_PTSZ(CUDA, DRV, "cuStreamSynchronize",	"zn_stream_sync"),
	CUDA(RT,  "cudaEventSynchronize",		"zn_event_sync"),
	CUDA(DRV, "cuEventSynchronize",			"zn_event_sync"),
	CUDA(RT,  "cudaEventQuery",			"zn_event_query"),
	CUDA(DRV, "cuEventQuery",			"zn_event_query"),
	WITH_PTSZ(CUDA, RT,  "cudaStreamQuery",		"zn_stream_query"),
	WITH_PTSZ(CUDA, DRV, "cuStreamQuery",		"zn_stream_query"),
	CUDA(RT,  "cudaDeviceSynchronize",		"zn_device_sync"),
	CUDA(DRV, "cuCtxSynchronize",			"zn_device_sync"),
	CUDA(DRV, "cuCtxSynchronize_v2",		"zn_device_sync"),
	WITH_PTSZ(CUDA, RT,  "cudaEventRecord",		"zn_event_record"),
	WITH_PTSZ(CUDA, RT,  "cudaEventRecordWithFlags", "zn_event_record"),
	WITH_PTSZ(CUDA, DRV, "cuEventRecord",		"zn_event_record"),
	WITH_PTSZ(CUDA, DRV, "cuEventRecordWithFlags",	"zn_event_record"),
	WITH_PTSZ(CUDA, RT,  "cudaStreamWaitEvent",	"zn_stream_wait"),
	WITH_PTSZ(CUDA, DRV, "cuStreamWaitEvent",	"zn_stream_wait"),
	WITH_PTSZ(CUDA, RT,  "cudaStreamBeginCapture",	"zn_capture_begin"),
	WITH_PTSZ(CUDA, DRV, "cuStreamBeginCapture_v2",	"zn_capture_begin"),
	WITH_PTSZ(CUDA, RT,  "cudaStreamEndCapture",	"zn_capture_end"),
	WITH_PTSZ(CUDA, DRV, "cuStreamEndCapture",	"zn_capture_end"),
};

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
		nccltrack_call(tracker(d), e);
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
		nccltrack_comm_end(tracker(d), e->hdr.pid, e->comm, 0);
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
	nccltrack_comm_end(tracker(d), e->hdr.pid, e->comm,
			   e->how != ZN_END_ABORT && e->ret == 0 ? e->hdr.ts_ns : 0);
	if (e->how != ZN_END_FINALIZE)
		agg_nccl_comm_end(d->agg, e->hdr.pid, e->comm, e->hdr.ts_ns);
	return 0;
}

static int dec_nccl_group(struct decode *d, const void *rec)
{
	nccltrack_group(tracker(d), rec);
	return 0;
}

static int dec_cuda_sync(struct decode *d, const void *rec)
{
	const struct zev_cuda_sync *e = rec;

	if (e->kind >= ZN_SYNC_KIND_COUNT)
		return -EINVAL;
	if (e->kind == ZN_SYNC_STREAM || e->kind == ZN_SYNC_EVENT || e->kind == ZN_SYNC_DEVICE)
		gpu_mem_pools_synced(d, e->hdr.pid);
	nccltrack_sync(tracker(d), e);
	return 0;
}

static int dec_cuda_order(struct decode *d, const void *rec)
{
	const struct zev_cuda_order *e = rec;

	if (e->kind >= ZN_ORDER_KIND_COUNT)
		return -EINVAL;
	nccltrack_order(tracker(d), e);
	return 0;
}

static const struct probe_decoder decoders[] = {
	DECODER(ZEV_NCCL_CALL,	zev_nccl_call,	dec_nccl_call),
	DECODER(ZEV_NCCL_WAIT,	zev_nccl_wait,	dec_nccl_wait),
	DECODER(ZEV_NCCL_COMM,	zev_nccl_comm,	dec_nccl_comm),
	DECODER(ZEV_NCCL_ALLOC,	zev_nccl_alloc,	dec_nccl_alloc),
	DECODER(ZEV_NCCL_GROUP,	zev_nccl_group,	dec_nccl_group),
	DECODER(ZEV_NCCL_END,	zev_nccl_end,	dec_nccl_end),
	DECODER(ZEV_NCCL_GPU,	zev_nccl_gpu,	dec_nccl_gpu),
	DECODER(ZEV_CUDA_SYNC,	zev_cuda_sync,	dec_cuda_sync),
	DECODER(ZEV_CUDA_ORDER,	zev_cuda_order,	dec_cuda_order),
};

static const struct probe_state_ops state = {
	.make = state_new, .free = state_free, .proc_gone = proc_gone, .expire = expire,
};

PROBE_FAMILY(nccl, NULL, NULL, &state);
