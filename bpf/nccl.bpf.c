// SPDX-License-Identifier: (BSD-2-Clause OR GPL-2.0-only)
/*
 * NCCL collectives: per call its op, bytes and host-side duration, then the
 * wait from the call to the end of the next stream/device synchronisation
 * on the same thread; communicator rank and size from the init calls.
 * Uprobes attached by zernel-collector (root) to every libnccl/libcuda/
 * libcudart.
 *
 * x86-64 calling convention matters here: ncclCommInitRank passes its
 * 128-byte ncclUniqueId by value in memory, so `rank` travels in the third
 * integer register, not the fourth.  No argument this file needs lies on
 * the stack (the 7th and 8th arguments, comm and stream, are not used).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "bpf/watch.h"
#include "bpf/calls.h"

#define CLS_NCCL	1
#define CLS_COMM	2

#define FN_INIT_RANK	1	/* a0 ncclComm_t *, a1 nranks, a2 rank */
#define FN_INIT_ALL	2	/* a0 ncclComm_t *, a1 ndev, a2 const int *devlist */

#define PENDING_MAX	8
#define INIT_ALL_MAX	16

/* Collectives a thread issued since its last synchronisation. */
struct pending {
	__u32 n;
	__u32 op[PENDING_MAX];
	__u32 pad;
	__u64 start_ns[PENDING_MAX];
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, ZW_MAX_THREADS);
	__type(key, __u64);
	__type(value, struct pending);
} zn_pending SEC(".maps");

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
		return 0;	/* unknown type: bytes not counted */
	}
}

static __always_inline void coll_enter(__u32 op, __u64 count, __u64 dtype)
{
	zc_enter(SHM_WATCH_NCCL, CLS_NCCL, op, count * dtype_size(dtype & 0xffffffff), 0, 0);
}

/* ncclAllReduce(send, recv, count, datatype, op, comm, stream) */
SEC("uprobe")
int BPF_KPROBE(zn_all_reduce, void *s, void *r, __u64 count, __u64 dt)
{
	coll_enter(SHM_NCCL_ALL_REDUCE, count, dt);
	return 0;
}

/* ncclAllGather(send, recv, sendcount, datatype, comm, stream): bytes sent per rank */
SEC("uprobe")
int BPF_KPROBE(zn_all_gather, void *s, void *r, __u64 count, __u64 dt)
{
	coll_enter(SHM_NCCL_ALL_GATHER, count, dt);
	return 0;
}

/* ncclReduceScatter(send, recv, recvcount, datatype, op, comm, stream): bytes received per rank */
SEC("uprobe")
int BPF_KPROBE(zn_reduce_scatter, void *s, void *r, __u64 count, __u64 dt)
{
	coll_enter(SHM_NCCL_REDUCE_SCATTER, count, dt);
	return 0;
}

/* ncclBroadcast(send, recv, count, datatype, root, comm, stream) */
SEC("uprobe")
int BPF_KPROBE(zn_broadcast, void *s, void *r, __u64 count, __u64 dt)
{
	coll_enter(SHM_NCCL_BROADCAST, count, dt);
	return 0;
}

/* ncclReduce(send, recv, count, datatype, op, root, comm, stream) */
SEC("uprobe")
int BPF_KPROBE(zn_reduce, void *s, void *r, __u64 count, __u64 dt)
{
	coll_enter(SHM_NCCL_REDUCE, count, dt);
	return 0;
}

/* ncclSend(send, count, datatype, peer, comm, stream) */
SEC("uprobe")
int BPF_KPROBE(zn_send, void *b, __u64 count, __u64 dt)
{
	coll_enter(SHM_NCCL_SEND, count, dt);
	return 0;
}

/* ncclRecv(recv, count, datatype, peer, comm, stream) */
SEC("uprobe")
int BPF_KPROBE(zn_recv, void *b, __u64 count, __u64 dt)
{
	coll_enter(SHM_NCCL_RECV, count, dt);
	return 0;
}

SEC("uretprobe")
int BPF_KRETPROBE(zn_coll_ret, int ret)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u64 now = bpf_ktime_get_ns();
	struct pending fresh = {}, *p;
	struct zev_nccl_call *e;
	struct zc_call c;

	if (!zc_exit(CLS_NCCL, &c))
		return 0;
	e = zw_reserve_at(sizeof(*e), ZEV_NCCL_CALL, id, now);
	if (e) {
		e->op = c.fn;
		e->ret = ret;
		e->bytes = c.a0;
		e->ns = now - c.start_ns;
		zw_submit(e);
	}
	if (ret != 0)
		return 0;	/* nothing was queued: nothing to wait for */
	p = bpf_map_lookup_elem(&zn_pending, &id);
	if (!p) {
		bpf_map_update_elem(&zn_pending, &id, &fresh, BPF_NOEXIST);
		p = bpf_map_lookup_elem(&zn_pending, &id);
		if (!p) {
			zw_drop(ZW_DROP_STATE_FULL);
			return 0;
		}
	}
	if (p->n >= PENDING_MAX) {
		zw_drop(ZW_DROP_PENDING_FULL);
		return 0;
	}
	p->op[p->n & (PENDING_MAX - 1)] = c.fn;
	p->start_ns[p->n & (PENDING_MAX - 1)] = c.start_ns;
	p->n++;
	return 0;
}

/*
 * Return of cudaStreamSynchronize, cuStreamSynchronize,
 * cudaDeviceSynchronize, cuCtxSynchronize: every collective the thread
 * queued since the last one has finished by now.
 */
SEC("uretprobe")
int BPF_KRETPROBE(zn_sync_ret)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u64 now = bpf_ktime_get_ns();
	struct pending *p = bpf_map_lookup_elem(&zn_pending, &id);
	struct zev_nccl_wait *e;
	__u32 n;

	if (!p || p->n == 0)
		return 0;
	n = p->n;
	for (__u32 i = 0; i < PENDING_MAX; i++) {
		if (i >= n)
			break;
		e = zw_reserve_at(sizeof(*e), ZEV_NCCL_WAIT, id, now);
		if (!e)
			break;
		e->op = p->op[i];
		e->pad = 0;
		e->ns = now - p->start_ns[i];
		zw_submit(e);
	}
	p->n = 0;
	return 0;
}

/* ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank) */
SEC("uprobe")
int BPF_KPROBE(zn_init_rank, void *comm, int nranks, int rank)
{
	zc_enter(SHM_WATCH_NCCL, CLS_COMM, FN_INIT_RANK, (__u64)comm, (__u64)(__s64)nranks,
		 (__u64)(__s64)rank);
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

static __always_inline void emit_comm(__u64 id, __u64 comm, __s32 rank, __s32 nranks,
				      __s32 gpu)
{
	struct zev_nccl_comm *e = zw_reserve(sizeof(*e), ZEV_NCCL_COMM, id);

	if (!e)
		return;
	e->gpu = gpu < 0 ? ZEV_GPU_UNKNOWN : (__u32)gpu;
	e->rank = rank;
	e->nranks = nranks;
	e->pad = 0;
	e->comm = comm;
	zw_submit(e);
}

SEC("uretprobe")
int BPF_KRETPROBE(zn_init_ret, int ret)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct zc_call c;
	__u64 comm = 0;
	__s32 dev;

	if (!zc_exit(CLS_COMM, &c) || ret != 0 || !c.a0)
		return 0;
	if (c.fn == FN_INIT_RANK) {
		if (bpf_probe_read_user(&comm, sizeof(comm), (void *)c.a0) != 0)
			return 0;
		emit_comm(id, comm, (__s32)c.a2, (__s32)c.a1, zw_current_device(id));
		return 0;
	}
	/* ncclCommInitAll: comms[i] has rank i on devlist[i] (or device i). */
	for (__s32 i = 0; i < INIT_ALL_MAX; i++) {
		if (i >= (__s32)c.a1)
			break;
		if (bpf_probe_read_user(&comm, sizeof(comm), (void *)(c.a0 + 8 * i)) != 0)
			break;
		dev = i;
		if (c.a2 && bpf_probe_read_user(&dev, sizeof(dev), (void *)(c.a2 + 4 * i)) != 0)
			dev = -1;
		emit_comm(id, comm, i, (__s32)c.a1, dev);
	}
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
