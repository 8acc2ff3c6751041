// SPDX-License-Identifier: (BSD-2-Clause OR GPL-2.0-only)
/*
 * NCCL: per call its op, bytes, host-side duration, communicator and
 * stream; communicators with the ncclUniqueId they were made from; and,
 * in processes that use NCCL, the CUDA calls that order streams and
 * events or block the host until they finish.  The collector pairs them
 * (collector/probes/nccl/nccl_track.c): a collective's wait ends at the first
 * host-blocking call that covers its stream.  Uprobes attached by
 * zernel-collector (root) to every libnccl/libcuda/libcudart.
 *
 * The calling convention matters here: where the 128-byte ncclUniqueId of
 * ncclCommInitRank(Config), passed by value, and the arguments past the
 * sixth (ncclAllReduce's stream, ncclReduce's comm and stream) are at
 * entry differs between x86-64 and arm64 (bpf/nccl_args.h).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "bpf/watch.h"
#include "bpf/calls.h"
#include "bpf/nccl_args.h"
#include "bpf/pool_users.h"

#define CLS_END		0	/* communicators' ends: Finalize, Destroy, Abort */
#define CLS_NCCL	1	/* collectives and ncclGroupEnd */
#define CLS_COMM	2	/* communicator creation */
#define CLS_CUDA	3	/* synchronisations, events, stream waits */

#define FN_GROUP_END	0xffu	/* CLS_NCCL: not an op */

#define FN_INIT_RANK	1	/* a0 ncclComm_t *, a1 nranks, a2 rank; id saved at entry */
#define FN_INIT_ALL	2	/* a0 ncclComm_t *, a1 ndev, a2 const int *devlist */
#define FN_SCALABLE	3	/* a0 ncclComm_t *, a1 nranks, a2 rank; id = commIds[0] */
#define FN_SPLIT	4	/* a0 ncclComm_t *newcomm, a1 parent, a2 color */
#define FN_SHRINK	5	/* a0 ncclComm_t *newcomm, a1 parent */

#define INIT_ALL_MAX	16
#define NCCL_IN_PROGRESS	7

/* The uniqueId read at a communicator call's entry, until its return. */
struct zn_id {
	__u32 ok;
	__u32 pad;
	__u8 id[ZN_ID_BYTES];
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1024);
	__type(key, __u64);
	__type(value, struct zn_id);
} zn_ids SEC(".maps");

/* ncclDataType_t -> bytes (nccl.h: int8, uint8, int32, uint32, int64,
 * uint64, half, float, double, bfloat16, fp8 e4m3, fp8 e5m2). */
static __always_inline __u64 dtype_size(__u64 dt)
{
	switch (dt) {
	case 0: case 1: case 10: case 11:
		return 1;
	case 6: case 9:
		return 2;
	case 2: case 3: case 7:
		return 4;
	case 4: case 5: case 8:
		return 8;
	default:
		return 0;	/* unknown type: bytes not counted, call flagged */
	}
}

/* Integer argument register n (0-based) at a function's entry. */
static __always_inline __u64 reg_at(struct pt_regs *ctx, __u32 n)
{
#if defined(__TARGET_ARCH_x86)
	switch (n) {
	case 0: return ctx->di;
	case 1: return ctx->si;
	case 2: return ctx->dx;
	case 3: return ctx->cx;
	case 4: return ctx->r8;
	case 5: return ctx->r9;
	default: return 0;
	}
#else
	return n < 8 ? ((struct user_pt_regs *)ctx)->regs[n] : 0;
#endif
}

/* The argument at loc (bpf/nccl_args.h) at a function's entry: its value, or its bytes' address. */
static __always_inline __u64 arg_at(struct pt_regs *ctx, __u32 loc)
{
	__u64 slot = PT_REGS_SP(ctx) + ZN_STACK_SLOT0 + 8 * ZN_LOC_N(loc), v = 0;

	switch (ZN_LOC_KIND(loc)) {
	case ZN_IN_REG:
		return reg_at(ctx, ZN_LOC_N(loc));
	case ZN_ON_STACK:
		bpf_probe_read_user(&v, sizeof(v), (void *)slot);
		return v;
	default:
		return slot;
	}
}

static __always_inline void coll_enter(__u32 op, __u64 count, __u64 dtype, __u64 comm,
				       __u64 stream)
{
	__u64 size = dtype_size(dtype & 0xffffffff);
	__u32 flags = 0;
	__u64 bytes;

	if (size == 0)
		flags |= ZN_CALL_BAD_DTYPE;
	if ((__s64)count < 0)
		flags |= ZN_CALL_BAD_COUNT;
	bytes = flags ? 0 : count * size;
	zc_enter(SHM_WATCH_NCCL, CLS_NCCL, op | flags << 8, bytes, comm, stream);
}

/*
 * One program per call of ZN_COLLECTIVES (bpf/nccl_args.h): its count,
 * datatype, comm and stream, wherever the architecture passes them.
 * Counts are the call's own: bytes sent per rank for AllGather and
 * Gather, received per rank for ReduceScatter and Scatter, to each peer
 * for AlltoAll; Bcast is the in-place Broadcast.
 */
#define ZN_COLLECTIVE_PROG(name, op, count_at, dtype_at, comm_at, stream_at)	\
SEC("uprobe")									\
int BPF_KPROBE(zn_##name)							\
{										\
	coll_enter(op, arg_at(ctx, ZN_ARG_LOC(count_at)),			\
		   arg_at(ctx, ZN_ARG_LOC(dtype_at)),				\
		   arg_at(ctx, ZN_ARG_LOC(comm_at)),				\
		   arg_at(ctx, ZN_ARG_LOC(stream_at)));				\
	return 0;								\
}
ZN_COLLECTIVES(ZN_COLLECTIVE_PROG)

static __always_inline void emit_group(__u32 end)
{
	struct zev_nccl_group *e;

	e = zw_reserve(sizeof(*e), ZEV_NCCL_GROUP, bpf_get_current_pid_tgid());
	if (!e)
		return;
	e->end = end;
	e->pad = 0;
	zw_submit(e);
}

/* ncclGroupStart(): calls until the matching ncclGroupEnd are only queued. */
SEC("uprobe")
int BPF_KPROBE(zn_group_start)
{
	emit_group(0);
	return 0;
}

/* ncclGroupEnd(): the outermost one launches the group; its entry starts their time. */
SEC("uprobe")
int BPF_KPROBE(zn_group_end)
{
	emit_group(1);
	zc_enter(SHM_WATCH_NCCL, CLS_NCCL, FN_GROUP_END, 0, 0, 0);
	return 0;
}

SEC("uretprobe")
int BPF_KRETPROBE(zn_coll_ret, int ret)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u64 now = bpf_ktime_get_ns();
	struct zev_nccl_call *e;
	struct zc_call c;

	if (!zc_exit(CLS_NCCL, &c) || c.fn == FN_GROUP_END)
		return 0;
	e = zw_reserve_at(sizeof(*e), ZEV_NCCL_CALL, id, now);
	if (!e)
		return 0;
	e->op = c.fn & 0xff;
	e->flags = c.fn >> 8;
	e->ret = ret;
	e->bytes = c.a0;
	e->ns = now - c.start_ns;
	e->comm = c.a1;
	e->stream = c.a2;
	e->dev = zw_current_device(id);
	zw_submit(e);
	return 0;
}

/* ---- communicators ------------------------------------------------------ */

/* Saves the 128 bytes at src for the return; counted unreadable when they are not. */
static __always_inline void save_id(__u64 pid_tgid, const void *src)
{
	static const struct zn_id zero;
	struct zn_id *v;

	if (bpf_map_update_elem(&zn_ids, &pid_tgid, &zero, BPF_ANY) != 0)
		return;
	v = bpf_map_lookup_elem(&zn_ids, &pid_tgid);
	if (!v)
		return;
	v->ok = src && bpf_probe_read_user(v->id, sizeof(v->id), src) == 0;
}

/* ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank): id by value */
SEC("uprobe")
int BPF_KPROBE(zn_init_rank, void *comm, int nranks)
{
	int rank = (int)arg_at(ctx, ZN_INIT_RANK);

	if (zc_enter(SHM_WATCH_NCCL, CLS_COMM, FN_INIT_RANK, (__u64)comm, (__u64)(__s64)nranks,
		     (__u64)(__s64)rank))
		save_id(bpf_get_current_pid_tgid(), (void *)arg_at(ctx, ZN_INIT_ID));
	return 0;
}

/* ncclCommInitRankScalable(ncclComm_t *comm, int nranks, int rank, int nId,
 * ncclUniqueId *commIds, ncclConfig_t *config): NCCL hashes commIds[0]. */
SEC("uprobe")
int BPF_KPROBE(zn_init_scalable, void *comm, int nranks, int rank, int nid, void *ids)
{
	if (zc_enter(SHM_WATCH_NCCL, CLS_COMM, FN_SCALABLE, (__u64)comm, (__u64)(__s64)nranks,
		     (__u64)(__s64)rank))
		save_id(bpf_get_current_pid_tgid(), nid > 0 ? ids : NULL);
	return 0;
}

/* ncclCommInitAll(ncclComm_t *comms, int ndev, const int *devlist) */
SEC("uprobe")
int BPF_KPROBE(zn_init_all, void *comms, int ndev, void *devlist)
{
	zc_enter(SHM_WATCH_NCCL, CLS_COMM, FN_INIT_ALL, (__u64)comms, (__u64)(__s64)ndev,
		 (__u64)devlist);
	return 0;
}

/* ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm, config) */
SEC("uprobe")
int BPF_KPROBE(zn_split, void *parent, int color, int key, void *newcomm)
{
	zc_enter(SHM_WATCH_NCCL, CLS_COMM, FN_SPLIT, (__u64)newcomm, (__u64)parent,
		 (__u64)(__s64)color);
	return 0;
}

/* ncclCommShrink(ncclComm_t comm, int *exclude, int nexclude, ncclComm_t *newcomm, ...) */
SEC("uprobe")
int BPF_KPROBE(zn_shrink, void *parent, void *exclude, int nexclude, void *newcomm)
{
	zc_enter(SHM_WATCH_NCCL, CLS_COMM, FN_SHRINK, (__u64)newcomm, (__u64)parent, 0);
	return 0;
}

/* commAlloc(ncclComm *comm, ncclComm *parent, int nranks, int rank): libnccl-internal. */
SEC("uprobe")
int BPF_KPROBE(zn_comm_alloc, void *comm, void *parent, int nranks, int rank)
{
	struct zev_nccl_alloc *e;

	e = zw_reserve(sizeof(*e), ZEV_NCCL_ALLOC, bpf_get_current_pid_tgid());
	if (!e)
		return 0;
	e->comm = (__u64)comm;
	e->parent = (__u64)parent;
	e->rank = rank;
	e->nranks = nranks;
	zw_submit(e);
	return 0;
}

static __always_inline void emit_comm(__u64 id, __u32 origin, __u64 comm, __s32 rank,
				      __s32 nranks, __s32 gpu, struct zc_call *c, int ret)
{
	struct zev_nccl_comm *e = zw_reserve(sizeof(*e), ZEV_NCCL_COMM, id);
	struct zn_id *v;

	if (!e)
		return;
	e->gpu = gpu < 0 ? ZEV_GPU_UNKNOWN : (__u32)gpu;
	e->rank = rank;
	e->nranks = nranks;
	e->origin = origin;
	e->comm = comm;
	e->parent = origin == SHM_NCCL_ORIGIN_SPLIT || origin == SHM_NCCL_ORIGIN_SHRINK ? c->a1 : 0;
	e->out = origin == SHM_NCCL_ORIGIN_SPLIT || origin == SHM_NCCL_ORIGIN_SHRINK ? c->a0 : 0;
	e->color = origin == SHM_NCCL_ORIGIN_SPLIT ? (__s32)c->a2 : 0;
	e->ret = ret;
	e->id_ok = 0;
	e->pad = 0;
	__builtin_memset(e->id, 0, sizeof(e->id));
	if (origin == SHM_NCCL_ORIGIN_INIT_RANK || origin == SHM_NCCL_ORIGIN_SCALABLE) {
		v = bpf_map_lookup_elem(&zn_ids, &id);
		if (v && v->ok) {
			__builtin_memcpy(e->id, v->id, sizeof(e->id));
			e->id_ok = 1;
		}
	}
	zw_submit(e);
}

SEC("uretprobe")
int BPF_KRETPROBE(zn_init_ret, int ret)
{
	__u64 id = bpf_get_current_pid_tgid();
	__s32 dev = zw_current_device(id);
	struct zc_call c;
	__u64 comm = 0;
	__u32 origin;

	if (!zc_exit(CLS_COMM, &c))
		return 0;
	if (ret != 0 && ret != NCCL_IN_PROGRESS) {
		bpf_map_delete_elem(&zn_ids, &id);
		return 0;
	}
	switch (c.fn) {
	case FN_INIT_RANK:
	case FN_SCALABLE:
		origin = c.fn == FN_INIT_RANK ? SHM_NCCL_ORIGIN_INIT_RANK : SHM_NCCL_ORIGIN_SCALABLE;
		if (c.a0)
			bpf_probe_read_user(&comm, sizeof(comm), (void *)c.a0);
		emit_comm(id, origin, comm, (__s32)c.a2, (__s32)c.a1, dev, &c, ret);
		bpf_map_delete_elem(&zn_ids, &id);
		return 0;
	case FN_SPLIT:
	case FN_SHRINK:
		/* A split that made nothing here (no colour) still counts for the parent. */
		if (c.a0)
			bpf_probe_read_user(&comm, sizeof(comm), (void *)c.a0);
		origin = c.fn == FN_SPLIT ? SHM_NCCL_ORIGIN_SPLIT : SHM_NCCL_ORIGIN_SHRINK;
		emit_comm(id, origin, comm, -1, -1, dev, &c, ret);
		return 0;
	default:
		break;
	}
	/* ncclCommInitAll: comms[i] has rank i on devlist[i] (or device i). */
	if (!c.a0)
		return 0;
	for (__s32 i = 0; i < INIT_ALL_MAX; i++) {
		if (i >= (__s32)c.a1)
			break;
		if (bpf_probe_read_user(&comm, sizeof(comm), (void *)(c.a0 + 8 * i)) != 0)
			break;
		dev = i;
		if (c.a2 && bpf_probe_read_user(&dev, sizeof(dev), (void *)(c.a2 + 4 * i)) != 0)
			dev = -1;
		emit_comm(id, SHM_NCCL_ORIGIN_INIT_ALL, comm, i, (__s32)c.a1, dev, &c, ret);
	}
	return 0;
}

/*
 * A communicator's end, reported at the return: only then is a freed
 * handle free for the allocator to give to a new communicator, whose
 * creation the collector must see after this end.
 */
#define ZN_END_PROG(name, how)	\
	ZC_ENTER_PROG(name, SHM_WATCH_NCCL, CLS_END, how, (__u64)comm, 0, 0, void *comm)

/* ncclCommFinalize(ncclComm_t comm) */
ZN_END_PROG(zn_finalize, ZN_END_FINALIZE)

/* ncclCommDestroy(ncclComm_t comm) */
ZN_END_PROG(zn_destroy, ZN_END_DESTROY)

/* ncclCommAbort(ncclComm_t comm) */
ZN_END_PROG(zn_abort, ZN_END_ABORT)

SEC("uretprobe")
int BPF_KRETPROBE(zn_end_ret, int ret)
{
	__u64 now = bpf_ktime_get_ns();
	struct zev_nccl_end *e;
	struct zc_call c;

	if (!zc_exit(CLS_END, &c))
		return 0;
	e = zw_reserve_at(sizeof(*e), ZEV_NCCL_END, bpf_get_current_pid_tgid(), now);
	if (!e)
		return 0;
	e->comm = c.a0;
	e->ret = ret;
	e->how = c.fn;
	e->ns = now - c.start_ns;
	zw_submit(e);
	return 0;
}

/* ---- what ends a wait: CUDA synchronisations and stream order ----------- */

#define FN_ORDER	0x100u	/* + enum zn_order_kind */

/*
 * Processes that use NCCL report these, and processes that allocate from
 * memory pools their blocking synchronisations, where a pool gives memory
 * back (bpf/pool_users.h); never from inside an NCCL call (NCCL orders and
 * synchronises its own internal streams).
 */
static __always_inline int cuda_enter(__u32 fn, __u64 a, __u64 b)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	__u32 *reasons = bpf_map_lookup_elem(&zw_watched, &tgid);
	struct zc_task *t;

	if (!reasons)
		return 0;
	if (!(*reasons & SHM_WATCH_NCCL) &&
	    !((fn == ZN_SYNC_STREAM || fn == ZN_SYNC_EVENT || fn == ZN_SYNC_DEVICE) &&
	      bpf_map_lookup_elem(&zm_pool_users, &tgid)))
		return 0;
	t = zc_task(0);
	if (t && (t->cls[CLS_NCCL].depth || t->cls[CLS_COMM].depth || t->cls[CLS_END].depth))
		return 0;
	zc_enter(SHM_WATCH_CUDA, CLS_CUDA, fn, a, b, 0);
	return 0;
}

/* A program name(params) that reports the call fn with a and b. */
#define ZN_CUDA_PROG(name, fn, a, b, params...)	\
SEC("uprobe")					\
int BPF_KPROBE(name, ##params)			\
{						\
	return cuda_enter(fn, a, b);		\
}

ZN_CUDA_PROG(zn_stream_sync, ZN_SYNC_STREAM, stream, 0, __u64 stream)
ZN_CUDA_PROG(zn_event_sync, ZN_SYNC_EVENT, event, 0, __u64 event)
ZN_CUDA_PROG(zn_event_query, ZN_SYNC_EVENT_QUERY, event, 0, __u64 event)
ZN_CUDA_PROG(zn_stream_query, ZN_SYNC_STREAM_QUERY, stream, 0, __u64 stream)
ZN_CUDA_PROG(zn_device_sync, ZN_SYNC_DEVICE, 0, 0)

/* cudaEventRecord(event, stream), cudaEventRecordWithFlags(event, stream, flags) */
ZN_CUDA_PROG(zn_event_record, FN_ORDER + ZN_ORDER_RECORD, event, stream, __u64 event, __u64 stream)

/* cudaStreamWaitEvent(stream, event, flags) */
ZN_CUDA_PROG(zn_stream_wait, FN_ORDER + ZN_ORDER_WAIT, stream, event, __u64 stream, __u64 event)

ZN_CUDA_PROG(zn_capture_begin, FN_ORDER + ZN_ORDER_CAPTURE_BEGIN, stream, 0, __u64 stream)
ZN_CUDA_PROG(zn_capture_end, FN_ORDER + ZN_ORDER_CAPTURE_END, stream, 0, __u64 stream)

SEC("uretprobe")
int BPF_KRETPROBE(zn_cuda_ret, int ret)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct zev_cuda_order *o;
	struct zev_cuda_sync *s;
	struct zc_call c;

	if (!zc_exit(CLS_CUDA, &c) || ret != 0)
		return 0;
	if (c.fn >= FN_ORDER) {
		o = zw_reserve(sizeof(*o), ZEV_CUDA_ORDER, id);
		if (!o)
			return 0;
		o->kind = c.fn - FN_ORDER;
		o->dev = zw_current_device(id);
		o->a = c.a0;
		o->b = c.a1;
		zw_submit(o);
		return 0;
	}
	s = zw_reserve(sizeof(*s), ZEV_CUDA_SYNC, id);
	if (!s)
		return 0;
	s->kind = c.fn;
	s->dev = zw_current_device(id);
	s->handle = c.a0;
	zw_submit(s);
	return 0;
}

/* ---- GPU time, from Zernel's NCCL profiler plugin (nccl-profiler/) ------- */

/* zernel_nccl_gpu_span(const struct zernel_nccl_gpu_span *span) */
SEC("uprobe")
int BPF_KPROBE(zn_gpu_span, const void *span)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct zernel_nccl_gpu_span s;
	struct zev_nccl_gpu *e;

	if (!zw_is_watched(id >> 32) || bpf_probe_read_user(&s, sizeof(s), span) != 0)
		return 0;
	e = zw_reserve(sizeof(*e), ZEV_NCCL_GPU, id);
	if (!e)
		return 0;
	e->span = s;
	zw_submit(e);
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
